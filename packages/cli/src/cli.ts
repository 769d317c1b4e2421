import { resolve } from "node:path";
import {
  defaultRunSettings,
  emptyUsage,
  FileRunStore,
  InvalidConfigError,
  InvalidRequestError,
  isFinal,
  type PlanResult,
  type ReviewPlan,
  type RunEvent,
  RunNotFoundError,
  type RunReport,
  type RunState,
  recoverRun,
  TaskLedgerError,
  type TaskRun,
  type Usage,
} from "@taskledger/core";
import { Command, CommanderError } from "commander";
import pc from "picocolors";
import type { Colors } from "picocolors/types.js";
import { type CliIo, exitCodes } from "./cli-io.js";
import {
  maxSubTasksLimit,
  parseRunOptions,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "./cli-options.js";
import { setUpDemo } from "./demo.js";
import { eventLines } from "./event-lines.js";
import { hostSettingsOf, loggedOptions, readHostSettings } from "./host-settings.js";
import { toJsonReport } from "./json-report.js";
import { createModelWarningPrinter } from "./model-warnings.js";
import { createPlanReviewer } from "./plan-reviewer.js";
import { applyEvent, createProgressState } from "./progress-state.js";
import { createLineReporter, createTtyReporter, type Reporter } from "./reporter.js";
import { readRequest } from "./request-source.js";
import { createRuntime } from "./runtime.js";
import { summaryTable } from "./summary-table.js";
import { terminalText } from "./terminal-text.js";

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
      .option(
        "--agent-model <provider/model>",
        "the model opencode uses (default: the provider's agent default, or --model when given)",
      )
      .option("--opencode-config <file>", "JSON merged into each opencode session's config")
      .option("--cwd <dir>", "directory the agents work in", ".")
      .option("--concurrency <n>", "sub-tasks running at once", "3")
      .option("--max-retries <n>", "retries per sub-task", "2")
      .option(
        "--max-sub-tasks <n>",
        `largest plan accepted, 1 to ${maxSubTasksLimit}`,
        String(defaultRunSettings.maxSubTasks),
      )
      .option("--store <dir>", "directory for the run's durable log")
      .option(
        "--alternate-agent-model <provider/model>",
        "agent model to try once when retries fail (repeatable)",
        (value: string, list: string[] = []) => [...list, value],
      )
      .option("--no-replan", "fail a sub-task instead of replanning it when its retries are spent")
      .option("--json", "print the final report as JSON on stdout; progress goes to stderr");

  // The request as words, `-` for stdin, or a file: argv caps one argument at 128 KB.
  const withRequest = (command: Command, what: string) =>
    withRunOptions(command.argument("[request...]", `${what}; - reads it from stdin`)).option(
      "--request-file <path>",
      "read the request from a file",
    );

  withRequest(program.command("run"), "what to get done")
    .description("plan the request, run every sub-task, evaluate, retry and report")
    .option("-y, --yes", "do not ask before running the plan")
    .option("--dry-run", "plan only: print the Task Ledger and stop")
    .action(async (words: string[], raw: RawRunOptions) => {
      const options = await parseRunOptions(raw, io.cwd);
      const source = await readRequest(words, raw.requestFile, io);
      exitCode = await runCommand(source.request, options, io, source.fromStdin);
    });

  withRequest(program.command("plan"), "what to plan")
    .description("print the Task Ledger the manager would run")
    .action(async (words: string[], raw: RawRunOptions) => {
      const options = { ...(await parseRunOptions(raw, io.cwd)), dryRun: true };
      const source = await readRequest(words, raw.requestFile, io);
      exitCode = await runCommand(source.request, options, io, source.fromStdin);
    });

  withRunOptions(program.command("resume").argument("<run-id>", "the run to continue"))
    .description(
      "continue a run stored with --store after a crash, a kill or Ctrl-C; it keeps the options it was started with unless given again",
    )
    .option("-y, --yes", "do not ask before running a replan")
    .action(async (runId: string, raw: RawRunOptions, command: Command) => {
      const given = new Set(
        loggedOptions
          .map(([key]) => key)
          .filter((key) => command.getOptionValueSource(key) === "cli"),
      );
      exitCode = await resumeCommand(runId, raw, given, io);
    });

  program
    .command("demo")
    .description(
      "run a scripted multi-step request offline: a local model server and the real opencode CLI",
    )
    .option("--json", "print the final report as JSON on stdout; progress goes to stderr")
    .option("--keep", "keep the directory the agents worked in")
    .option("--concurrency <n>", "sub-tasks running at once", "2")
    .action(async (raw: { json?: boolean; keep?: boolean; concurrency?: string }) => {
      const concurrency = (await parseRunOptions({ concurrency: raw.concurrency }, io.cwd))
        .concurrency;
      const demo = await setUpDemo({
        json: raw.json === true,
        keep: raw.keep === true,
        concurrency,
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
    InvalidRequestError.isInstance(error)
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

function colorsFor(stream: { isTTY?: boolean }, env: CliIo["env"]): Colors {
  const enabled = stream.isTTY === true && env.NO_COLOR === undefined && env.CI === undefined;
  return pc.createColors(enabled);
}

/** `stdinUsed`: the request came from stdin, which then cannot answer the review prompt. */
async function runCommand(
  request: string,
  options: RunOptions,
  io: CliIo,
  stdinUsed = false,
): Promise<number> {
  if (request.trim() === "") throw new UsageError("the request is empty");
  // With --json, stdout carries only the report; people read progress on stderr.
  const human = options.json ? io.stderr : io.stdout;
  const c = colorsFor(human, io.env);
  const view: LiveView = { reporter: undefined };
  const runtime = createRuntime(
    options,
    io.env,
    stdinUsed ? undefined : reviewerFor(options, io, human, c, view),
    modelWarningsFor(io, view),
  );
  try {
    human.write(c.dim(`Planning with ${options.provider}/${options.model}…\n`));
    if (options.dryRun) {
      const plan = await runtime.manager.plan(request, { abortSignal: io.signal });
      printPlan(plan, human, c);
      if (options.json) io.stdout.write(`${JSON.stringify(plan.ledger, null, 2)}\n`);
      return exitCodes.completed;
    }
    // Planning inside the run puts it in the run's log first, so even a crash while planning
    // can be resumed; a person reviews the plan through the run's reviewPlan hook.
    const run = runtime.manager.start(request, {
      abortSignal: io.signal,
      cwd: options.cwd,
      // Logged with the run, so `resume` needs only the store.
      settings: { host: { ...hostSettingsOf(options) } },
    });
    return await follow(run, [], options, io, human, c, view);
  } finally {
    await runtime.close();
  }
}

/** The reporter on screen, for the plan reviewer to pause while a person answers. */
interface LiveView {
  reporter: Reporter | undefined;
}

/**
 * Shows a run's progress until it ends, then the summary (and the JSON report); resolves with the
 * exit code. `history` is what the log already holds, for a resumed run: it fills the view silently.
 */
async function follow(
  run: TaskRun,
  history: readonly RunEvent[],
  options: Pick<RunOptions, "json">,
  io: CliIo,
  human: CliIo["stdout"],
  c: Colors,
  view: LiveView = { reporter: undefined },
): Promise<number> {
  const live = human.isTTY === true && io.env.CI === undefined;
  const reporter: Reporter = live
    ? createTtyReporter(human as NodeJS.WriteStream, c)
    : createLineReporter(human, c);
  view.reporter = reporter;
  for (const event of history) applyEvent(reporter.state, event);
  run.on("*", (event) => reporter.onEvent(event));
  let report: RunReport;
  try {
    report = await run.result;
  } finally {
    reporter.stop();
  }
  const perSubTask = new Map<string, Usage>(reporter.state.subTasks.map((s) => [s.id, s.usage]));
  human.write(`${summaryTable(report, perSubTask, c)}\n`);
  if (options.json) io.stdout.write(`${JSON.stringify(toJsonReport(report), null, 2)}\n`);
  // A plan declined at the prompt is "not completed"; only an interrupt is 130.
  if (report.status === "cancelled" && io.signal.aborted) return exitCodes.cancelled;
  return report.status === "completed" ? exitCodes.completed : exitCodes.notCompleted;
}

/**
 * `taskledger resume RUN --store DIR`: continues a stored run where its log ends, with the options
 * it logged at start; an option given again overrides its logged value, with a notice.
 */
async function resumeCommand(
  runId: string,
  raw: RawRunOptions,
  given: ReadonlySet<keyof RawRunOptions>,
  io: CliIo,
): Promise<number> {
  if (!raw.store) throw new UsageError("resume needs --store, the directory the run was stored in");
  const history = await new FileRunStore(resolve(io.cwd, raw.store)).read(runId);
  if (history.length === 0) throw new RunNotFoundError(runId);
  const recovered = recoverRun(history, runId);
  const { options, notices } = await resumeOptions(recovered, raw, given, io.cwd);
  const human = options.json ? io.stderr : io.stdout;
  const c = colorsFor(human, io.env);
  for (const notice of notices) human.write(c.dim(`note: ${notice}\n`));
  const view: LiveView = { reporter: undefined };
  const runtime = createRuntime(
    options,
    io.env,
    reviewerFor(options, io, human, c, view),
    modelWarningsFor(io, view),
  );
  try {
    const done = [...recovered.subTasks.values()].filter((s) => s.status === "completed").length;
    human.write(
      isFinal(recovered)
        ? `Run ${runId} had already finished.\n`
        : `Resuming run ${runId}: ${done} of ${recovered.subTasks.size} sub-task(s) already completed.\n`,
    );
    const planned = history.find((event) => event.type === "plan-created");
    if (planned?.type === "plan-created") printPlan(planned, human, c);
    const run = runtime.manager.resume(runId, {
      abortSignal: io.signal,
      ...(given.has("cwd") ? { cwd: options.cwd } : {}),
      settings: {
        ...(given.has("concurrency") ? { concurrency: options.concurrency } : {}),
        ...(given.has("maxRetries") ? { maxRetries: options.maxRetries } : {}),
        ...(given.has("maxSubTasks") ? { maxSubTasks: options.maxSubTasks } : {}),
        ...(given.has("alternateAgentModel")
          ? { alternateAgentModels: options.alternateAgentModels }
          : {}),
        ...(given.has("replan") ? { replan: { enabled: options.replan } } : {}),
      },
    });
    return await follow(run, history, options, io, human, c, view);
  } finally {
    await runtime.close();
  }
}

/** The options a resumed run runs with: those it logged, under those given again. */
async function resumeOptions(
  recovered: RunState,
  raw: RawRunOptions,
  given: ReadonlySet<keyof RawRunOptions>,
  cwd: string,
): Promise<{ options: RunOptions; notices: string[] }> {
  const host = readHostSettings(recovered.settings?.host);
  const notices: string[] = [];
  if (!host) {
    notices.push(
      "this run's log does not hold its options (an older taskledger wrote it): using the options given now",
    );
    return { options: await parseRunOptions(raw, cwd), notices };
  }
  const logged: RawRunOptions = {
    provider: host.provider,
    model: host.model,
    ...(host.baseURL ? { baseUrl: host.baseURL } : {}),
    agentModel: host.agentModel,
    ...(recovered.cwd ? { cwd: recovered.cwd } : {}),
    ...(recovered.settings
      ? {
          concurrency: String(recovered.settings.concurrency),
          maxRetries: String(recovered.settings.maxRetries),
          maxSubTasks: String(recovered.settings.maxSubTasks),
          alternateAgentModel: recovered.settings.alternateAgentModels,
          replan: recovered.settings.replan.enabled,
        }
      : {}),
  };
  const merged: RawRunOptions = { ...raw };
  for (const [key, flag] of loggedOptions) {
    if (given.has(key)) {
      notices.push(`${flag} given: it overrides what the run was started with`);
      continue;
    }
    if (key === "opencodeConfig") delete merged.opencodeConfig;
    else if (logged[key] === undefined) delete merged[key];
    else Object.assign(merged, { [key]: logged[key] });
  }
  const options = await parseRunOptions(merged, cwd);
  if (!given.has("opencodeConfig") && host.opencodeConfig)
    options.opencodeConfig = host.opencodeConfig;
  return { options, notices };
}

/** The manager's model warnings, one line each on stderr, around the live view if one is up. */
function modelWarningsFor(io: CliIo, view: LiveView) {
  return createModelWarningPrinter(io.stderr, colorsFor(io.stderr, io.env), (write) =>
    view.reporter ? view.reporter.aside(write) : write(),
  );
}

/** At a terminal and without --yes or --json, plans and replans are put to the person. */
function reviewerFor(
  options: Pick<RunOptions, "yes" | "json">,
  io: CliIo,
  human: CliIo["stdout"],
  c: Colors,
  view: LiveView,
): ReviewPlan | undefined {
  const confirming =
    !options.yes && !options.json && io.stdin.isTTY === true && human.isTTY === true;
  return confirming
    ? createPlanReviewer({
        io,
        out: human,
        c,
        pause: () => view.reporter?.pause(),
        resume: () => view.reporter?.resume(),
      })
    : undefined;
}

function printPlan(plan: Omit<PlanResult, "usage">, out: CliIo["stdout"], c: Colors): void {
  const state = createProgressState();
  const event = {
    type: "plan-created",
    usage: emptyUsage(),
    ...plan,
    runId: "",
    seq: 0,
    time: "",
  } as const;
  applyEvent(state, event);
  out.write(`${eventLines(event, state, c).join("\n")}\n`);
}
