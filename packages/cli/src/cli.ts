import { resolve } from "node:path";
import {
  defaultRunSettings,
  InvalidConfigError,
  InvalidRequestError,
  SandboxUnavailableError,
  TaskLedgerError,
  type TaskLedgerInput,
  WorkspaceError,
} from "@taskledger/core";
import { Command, CommanderError } from "commander";
import { addCleanCommand } from "./clean-command.js";
import { type CliIo, exitCodes } from "./cli-io.js";
import {
  maxSubTasksLimit,
  otlpFromEnv,
  parseRunOptions,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "./cli-options.js";
import { addDaemonCommand } from "./daemon-command.js";
import { setUpDemo } from "./demo.js";
import { hostSettingsOf, loggedOptions } from "./host-settings.js";
import { addMcpCommand } from "./mcp-command.js";
import { readPlanFile, requestOfPlan } from "./plan-file.js";
import { loadProjectConfig, projectConfigName } from "./project-config.js";
import { readRequest } from "./request-source.js";
import { resumeCommand } from "./resume-command.js";
import { colorsFor, openSession, printPlan, printProjectLine } from "./terminal-session.js";
import { terminalText } from "./terminal-text.js";
import { addUiCommand, openRunPage, type UiFlags, withUiOptions } from "./ui-command.js";
import { addWorkerCommand } from "./worker-command.js";

/** Runs the `taskledger` command line and resolves with its exit code; never calls `process.exit`. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = exitCodes.completed;
  const program = new Command("taskledger")
    .description(
      "Plan a request into sub-tasks, run each as a fresh opencode session, judge, retry and report.",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  const withRunOptions = (command: Command) =>
    command
      .option(
        "--provider <name>",
        "manager model provider: anthropic|openai|google|xai|openai-compatible",
        "anthropic",
      )
      .option("--model <id>", "manager model id (default per provider, see docs/cli.md)")
      .option("--base-url <url>", "API base URL (required for openai-compatible)")
      .option("--agent <name>", "the coding agent: opencode (default), claude-code or codex")
      .option(
        "--agent-model <model>",
        "the agent's model: provider/model for opencode (default: the provider's agent default, or --model when given); a model name for claude-code (default sonnet) and codex (required)",
      )
      .option("--opencode-config <file>", "JSON merged into each opencode session's config")
      .option("--cwd <dir>", "directory the agents work in", ".")
      .option("--concurrency <n>", "sub-tasks running at once (default 3)")
      .option("--max-retries <n>", "retries per sub-task", "2")
      .option(
        "--max-sub-tasks <n>",
        `largest plan accepted, 1 to ${maxSubTasksLimit}`,
        String(defaultRunSettings.maxSubTasks),
      )
      .option("--store <dir>", "directory for the run's durable log")
      .option(
        "--alternate-agent-model <model>",
        "agent model to try once when retries fail (repeatable); claude-code:<model>, codex:<model> or opencode:<provider/model> changes agent too",
        (value: string, list: string[] = []) => [...list, value],
      )
      .option("--no-replan", "fail a sub-task instead of replanning it when its retries are spent")
      .option(
        "--best-of <n>",
        "parallel candidates (2 to 8) for each sub-task the planner marks risky, and once for any whose retries fail; the checks and one comparative judge call choose the one merged",
      )
      .option(
        "--best-of-all",
        "with --best-of: every sub-task gets candidates from its first attempt",
      )
      .option("--no-best-of-ladder", "with --best-of: no round of candidates after failed retries")
      .option(
        "--candidate-model <model>",
        "with --best-of: the candidates' agent models, in turn (repeatable; named as --alternate-agent-model)",
        (value: string, list: string[] = []) => [...list, value],
      )
      .option(
        "--no-project-checks",
        "do not add the project's own test and typecheck commands to the checks of sub-tasks that change files",
      )
      .option(
        "--executor <kind>",
        "server: sessions in running opencode servers (default); cli: a new opencode process per attempt",
      )
      .option("--max-cost <usd>", "money budget: start nothing new once the run has spent this")
      .option(
        "--prices <file>",
        'JSON prices for private or new models: {"provider/model": {"inputPerMillion": 3, "outputPerMillion": 15}}',
      )
      .option("--otlp <url>", "export the run's OpenTelemetry spans to this OTLP/HTTP endpoint")
      .option("--redis <url>", "send attempts to `taskledger worker`s through this Redis")
      .option("--remote <url>", "with --redis: the git remote workers fetch from and push to")
      .option(
        "--redis-timeout <ms>",
        "with --redis: fail once Redis is unreachable this long",
        "30000",
      )
      .option(
        "--stalled-check <ms>",
        "with --redis: how often to look for attempts whose worker died",
        "30000",
      )
      .option(
        "--worker-wait <ms>",
        "with --redis: fail an attempt that waited this long with no worker running",
        "300000",
      )
      .option(
        "--sandbox <mode>",
        "the OS sandbox around every agent, check and setup: auto (default: confined where it works, else one line and on), required (refuse to run without it), off",
      )
      .option(
        "--allow-host <host>",
        "with the sandbox: a host the agents may reach besides their model endpoint (repeatable; host, host:port, *.domain or a URL)",
        (value: string, list: string[] = []) => [...list, value],
      )
      .option("--json", "print the final report as JSON on stdout; progress goes to stderr")
      .option(
        "--pass-env <name>",
        "a host environment variable the agents get besides their own list (repeatable)",
        (value: string, list: string[] = []) => [...list, value],
      )
      .option(
        "--agent-base-url <url>",
        "where the agent sends its model calls (Claude Code's ANTHROPIC_BASE_URL, a Codex model provider, opencode's provider baseURL)",
      )
      .option(
        "--no-daemon",
        "run the agent servers in this process, not in the background service that keeps them warm between runs (also TASKLEDGER_DAEMON=off)",
      );

  // The request as words, `-` for stdin, or a file: argv caps one argument at 128 KB.
  const withRequest = (command: Command, what: string) =>
    withRunOptions(command.argument("[request...]", `${what}; - reads it from stdin`))
      .option("--request-file <path>", "read the request from a file")
      .option("--config <file>", `project config (default: ${projectConfigName} from --cwd up)`)
      .option("--no-config", `ignore ${projectConfigName}`);
  // The options a run takes: the command line's, over the project config file's.
  const runOptionsOf = async (raw: RawRunOptions) => {
    const config =
      raw.config === false
        ? undefined
        : await loadProjectConfig(
            resolve(io.cwd, raw.cwd ?? "."),
            typeof raw.config === "string" ? raw.config : undefined,
          );
    return parseRunOptions(
      raw,
      io.cwd,
      config ? { path: config.path, ...config.config } : undefined,
    );
  };

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
      const options = await runOptionsOf(raw);
      const plan = raw.plan === undefined ? undefined : await readPlanFile(raw.plan, io.cwd);
      // A given plan needs no request: its titles stand for one.
      const source =
        plan !== undefined && words.length === 0 && raw.requestFile === undefined
          ? { request: requestOfPlan(plan), fromStdin: false }
          : await readRequest(words, raw.requestFile, io);
      exitCode = await runCommand(source.request, options, io, source.fromStdin, raw, plan);
    });

  withRequest(program.command("plan"), "what to plan")
    .description("print the Task Ledger the manager would run")
    .action(async (words: string[], raw: RawRunOptions) => {
      const options = { ...(await runOptionsOf(raw)), dryRun: true };
      const source = await readRequest(words, raw.requestFile, io);
      exitCode = await runCommand(source.request, options, io, source.fromStdin);
    });

  withUiOptions(
    withRunOptions(program.command("resume").argument("<run-id>", "the run to continue")),
  )
    .description(
      "continue a run stored with --store after a crash, a kill or Ctrl-C; it keeps the options it was started with unless given again",
    )
    .option("-y, --yes", "do not ask before running a replan")
    .action(async (runId: string, raw: RawRunOptions & UiFlags, command: Command) => {
      const given = new Set(
        loggedOptions
          .map(([key]) => key)
          .filter((key) => command.getOptionValueSource(key) === "cli"),
      );
      raw.otlp ??= otlpFromEnv(io.env);
      exitCode = await resumeCommand(runId, raw, given, io, raw);
    });

  program
    .command("demo")
    .description(
      "run a scripted multi-step request offline: a local model server and the real opencode CLI",
    )
    .option("--json", "print the final report as JSON on stdout; progress goes to stderr")
    .option("--keep", "keep the directory the agents worked in")
    .option("--concurrency <n>", "sub-tasks running at once", "2")
    .option("--agent <name>", "the agent doing the work: opencode (default), claude-code or codex")
    .action(
      async (raw: { json?: boolean; keep?: boolean; concurrency?: string; agent?: string }) => {
        const agent = raw.agent ? { agent: raw.agent } : {};
        // The demo's agent model: opencode's is set by the demo, the others take any name.
        const model = raw.agent && raw.agent !== "opencode" ? { agentModel: "demo-agent" } : {};
        const checked = await parseRunOptions(
          { concurrency: raw.concurrency, ...agent, ...model },
          io.cwd,
        );
        const demo = await setUpDemo({
          json: raw.json === true,
          keep: raw.keep === true,
          concurrency: checked.concurrency,
          agent: checked.agent,
        });
        const human = demo.options.json ? io.stderr : io.stdout;
        human.write(
          `Offline demo: a scripted model server at ${demo.options.baseURL}, agents working in ${demo.cwd}\n`,
        );
        try {
          exitCode = await runCommand(demo.request, demo.options, io);
        } finally {
          await demo.finish((text) => human.write(text));
        }
      },
    );

  addUiCommand(program, io, (code) => {
    exitCode = code;
  });
  addMcpCommand(withRunOptions, program, io, (code) => {
    exitCode = code;
  });
  addWorkerCommand(program, io, (code) => {
    exitCode = code;
  });
  addCleanCommand(program, io, (code) => {
    exitCode = code;
  });
  addDaemonCommand(program, io, (code) => {
    exitCode = code;
  });

  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    return reportError(error, io);
  }
}

function reportError(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? exitCodes.completed : exitCodes.usage;
  }
  const c = colorsFor(io.stderr, io.env);
  // A message may quote what a model answered.
  const message = (text: string) => terminalText(text, { multiline: true });
  if (
    error instanceof UsageError ||
    InvalidConfigError.isInstance(error) ||
    InvalidRequestError.isInstance(error) ||
    // `--sandbox required` where the OS sandbox cannot work: the machine is the caller's to fix.
    SandboxUnavailableError.isInstance(error) ||
    // Where the run was pointed (no repository, a detached HEAD, no git) is the caller's to fix.
    (WorkspaceError.isInstance(error) && error.reason !== "git-failed")
  ) {
    io.stderr.write(`${c.red("error:")} ${message(error.message)}\n`);
    return exitCodes.usage;
  }
  if (TaskLedgerError.isInstance(error)) {
    io.stderr.write(`${c.red("error:")} ${message(error.message)} ${c.dim(`[${error.code}]`)}\n`);
    return error.code === "aborted" ? exitCodes.cancelled : exitCodes.notCompleted;
  }
  io.stderr.write(
    `${c.red("error:")} ${message(error instanceof Error ? error.message : String(error))}\n`,
  );
  return exitCodes.notCompleted;
}

/** `stdinUsed`: the request came from stdin, which then cannot answer the review prompt. */
async function runCommand(
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
