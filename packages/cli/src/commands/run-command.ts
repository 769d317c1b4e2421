import type { TaskLedgerInput } from "@taskledger/core";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import {
  otlpFromEnv,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "../options/cli-options.js";
import { hostSettingsOf } from "../options/host-settings.js";
import { readPlanFile, requestOfPlan } from "../options/plan-file.js";
import { readRequest } from "../options/request-source.js";
import { runOptionsOf, withRequest } from "../options/run-flags.js";
import { openSession, printPlan, printProjectLine } from "../output/terminal-session.js";
import { openRunPage, type UiFlags, withUiOptions } from "./ui-command.js";

/** `taskledger run [request...]`: plan the request, run every sub-task, evaluate, retry and report. */
export function addRunCommand(program: Command, io: CliIo, exit: (code: number) => void): void {
  withUiOptions(withRequest(program.command("run"), "what to get done"))
    .description("plan the request, run every sub-task, evaluate, retry and report")
    .option("-y, --yes", "do not ask before running the plan")
    .option("--dry-run", "plan only: print the Task Ledger and stop")
    .option(
      "--isolation <mode>",
      "auto (default): a git worktree per attempt inside a git repository, else shared; worktree; shared",
    )
    .option("--no-apply", "with worktrees, leave the result on its branch instead of in your tree")
    .option(
      "--setup <command>",
      "shell command run in each new worktree, and again when lockfiles change (npm ci --prefer-offline)",
    )
    .option(
      "--include <pattern>",
      "ignored files each worktree gets, gitignore syntax, besides .worktreeinclude (repeatable)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option(
      "--no-dependencies",
      "do not copy ignored node_modules and Python virtual environments into worktrees",
    )
    .option(
      "--no-keep-slots",
      "make this run's worktrees anew and remove them at its end, instead of reusing the kept ones",
    )
    .option(
      "--plan <file>",
      "run this Task Ledger (JSON, as `plan --json` prints) without planning",
    )
    .option(
      "--explore",
      "before planning, one read-only agent session looks up what the plan needs (5 minutes at most)",
    )
    .action(async (words: string[], raw: RawRunOptions & UiFlags & { plan?: string }) => {
      raw.otlp ??= otlpFromEnv(io.env);
      const options = await runOptionsOf(raw, io);
      const plan = raw.plan === undefined ? undefined : await readPlanFile(raw.plan, io.cwd);
      // A given plan needs no request: its titles stand for one.
      const source =
        plan !== undefined && words.length === 0 && raw.requestFile === undefined
          ? { request: requestOfPlan(plan), fromStdin: false }
          : await readRequest(words, raw.requestFile, io);
      exit(await runCommand(source.request, options, io, source.fromStdin, raw, plan));
    });
}

/** `stdinUsed`: the request came from stdin, which then cannot answer the review prompt. */
export async function runCommand(
  request: string,
  options: RunOptions,
  io: CliIo,
  stdinUsed = false,
  ui: UiFlags = {},
  plan?: unknown,
): Promise<number> {
  if (request.trim() === "") throw new UsageError("the request is empty");
  // With --ui, a page shows the run and can answer its reviews and cancel it.
  const page = ui.ui && !options.dryRun ? openRunPage(options, io, ui) : undefined;
  if (page) ({ options, io } = page);
  const session = openSession(options, io, !stdinUsed, page?.reviewer);
  const { human, c, runtime } = session;
  try {
    await page?.listen();
    await runtime.ready(io.signal);
    human.write(c.dim(`Planning with ${options.provider}/${options.model}…\n`));
    if (options.dryRun) {
      const plan = await runtime.manager.plan(request, { abortSignal: io.signal });
      if (plan.project) printProjectLine(plan.project, human, c);
      printPlan(plan, human, c);
      if (options.json) io.stdout.write(`${JSON.stringify(plan.ledger, null, 2)}\n`);
      return exitCodes.completed;
    }
    // Planning inside the run puts it in the run's log first, so even a crash while planning
    // can be resumed; a person reviews the plan through the run's reviewPlan hook.
    const run = await runtime.start(request, {
      abortSignal: io.signal,
      cwd: options.cwd,
      ...(plan === undefined ? {} : { plan: plan as TaskLedgerInput }),
      // Logged with the run, so `resume` needs only the store.
      settings: { host: { ...hostSettingsOf(options) } },
    });
    page?.attach(run);
    return await session.follow(run);
  } finally {
    await runtime.close();
    await page?.close();
  }
}
