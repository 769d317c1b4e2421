import { homedir } from "node:os";
import { join } from "node:path";
import { recoverRun } from "@taskledger/core";
import { type RunHost, serveStdio } from "@taskledger/mcp";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "./cli-io.js";
import {
  integer,
  parseRunOptions,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "./cli-options.js";
import { hostSettingsOf } from "./host-settings.js";
import { resumeOptions } from "./resume-command.js";
import { createRuntime } from "./runtime.js";
import { terminalText } from "./terminal-text.js";

interface RawMcpOptions extends RawRunOptions {
  maxRuns?: string;
  maxWait?: string;
}

/** Where runs are logged when `--store` is not given: the user's state directory. */
export function defaultStore(env: CliIo["env"]): string {
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(state, "taskledger", "runs");
}

/**
 * `taskledger mcp`: serves taskledger's tools to an MCP client (a coding agent) on stdio until the
 * client closes stdin; stdout carries only the protocol, the log goes to stderr.
 */
export function addMcpCommand(
  withRunOptions: (command: Command) => Command,
  program: Command,
  io: CliIo,
  done: (code: number) => void,
): void {
  withRunOptions(program.command("mcp"))
    .description(
      "serve taskledger's tools to a coding agent over MCP (stdio): plan, start, wait, review, cancel, report, resume",
    )
    .option(
      "--isolation <mode>",
      "auto: a git worktree per attempt inside a git repository, else shared; worktree; shared",
      "auto",
    )
    .option("--no-apply", "with worktrees, leave each result on its branch instead of in the tree")
    .option("--max-runs <n>", "runs at once", "2")
    .option("--max-wait <seconds>", "longest wait_for_run call", "600")
    .action(async (raw: RawMcpOptions) => {
      const options = await parseRunOptions(
        { ...raw, store: raw.store ?? defaultStore(io.env) },
        io.cwd,
      );
      const log = (line: string) => io.stderr.write(`taskledger mcp: ${terminalText(line)}\n`);
      const runtime = createRuntime(options, io.env, undefined, (w) => log(w.message), log);
      try {
        await runtime.ready(io.signal);
        await serveStdio({
          host: runHost(options, runtime, io, log),
          startDirectory: options.cwd,
          env: io.env,
          log,
          maxRuns: integer("--max-runs", raw.maxRuns, 2, 1, 16),
          maxWaitSeconds: integer("--max-wait", raw.maxWait, 600, 1, 3600),
          stdin: io.stdin,
          stdout: io.stdout,
          signal: io.signal,
        });
      } finally {
        await runtime.close();
      }
      done(exitCodes.completed);
    });
}

function runHost(
  options: RunOptions,
  runtime: ReturnType<typeof createRuntime>,
  io: CliIo,
  log: (line: string) => void,
): RunHost {
  if (!runtime.store || !options.store) throw new UsageError("taskledger mcp needs a store");
  return {
    plan: (request, { abortSignal }) => runtime.manager.plan(request, { abortSignal }),
    start: (request, runOptions) =>
      runtime.start(request, {
        ...runOptions,
        // Logged with the run, so it resumes with the store alone.
        settings: { host: { ...hostSettingsOf(options) } },
      }),
    // A run resumes with the options it logged (it may come from `taskledger run`).
    async resume(runId, runOptions) {
      const recovered = recoverRun(runOptions.history, runId);
      const { options: logged } = await resumeOptions(
        recovered,
        { store: options.store },
        new Set(),
        io.cwd,
      );
      const own = createRuntime(logged, io.env, undefined, (w) => log(w.message), log);
      const run = await own.resume(runId, runOptions);
      void run.result.finally(() => own.close()).catch(() => {});
      return run;
    },
    store: runtime.store,
    storeDirectory: options.store,
    maxSubTasks: options.maxSubTasks,
  };
}
