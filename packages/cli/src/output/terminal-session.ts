import {
  emptyUsage,
  type PlanResult,
  type ProjectDigest,
  type ReviewPlan,
  type RunEvent,
  type RunReport,
  type TaskRun,
  type Usage,
} from "@taskledger/core";
import pc from "picocolors";
import type { Colors } from "picocolors/types.js";
import { type CliIo, exitCodes } from "../cli-io.js";
import type { RunOptions } from "../options/cli-options.js";
import { createRuntime, type Runtime } from "../runtime/runtime.js";
import { eventLines } from "./event-lines.js";
import { toJsonReport } from "./json-report.js";
import { createModelWarningPrinter } from "./model-warnings.js";
import { createPlanReviewer } from "./plan-reviewer.js";
import { applyEvent, createProgressState } from "./progress-state.js";
import { createLineReporter, createTtyReporter, type Reporter } from "./reporter.js";
import { summaryTable } from "./summary-table.js";
import { terminalText } from "./terminal-text.js";

/** What `run` and `resume` share on the terminal: where people read, its colours, the runtime. */
export interface TerminalSession {
  human: CliIo["stdout"];
  c: Colors;
  runtime: Runtime;
  /**
   * Shows a run's progress until it ends, then the summary (and the JSON report); resolves with
   * the exit code. `history` is what the log already holds, for a resumed run: it fills the view
   * silently.
   */
  follow(run: TaskRun, history?: readonly RunEvent[]): Promise<number>;
}

export function colorsFor(stream: { isTTY?: boolean }, env: CliIo["env"]): Colors {
  const enabled = stream.isTTY === true && env.NO_COLOR === undefined && env.CI === undefined;
  return pc.createColors(enabled);
}

/**
 * `review: false` when stdin cannot answer a prompt (the request came from it); `page` races the
 * terminal's reviewer against a page's (`run --ui`).
 */
export function openSession(
  options: RunOptions,
  io: CliIo,
  review = true,
  page?: (terminal: ReviewPlan | undefined) => ReviewPlan,
): TerminalSession {
  // With --json, stdout carries only the report; people read progress on stderr.
  const human = options.json ? io.stderr : io.stdout;
  const c = colorsFor(human, io.env);
  // The reporter on screen, for the plan reviewer and the model warnings to step around.
  let reporter: Reporter | undefined;
  const confirming =
    review && !options.yes && !options.json && io.stdin.isTTY === true && human.isTTY === true;
  const reviewer = confirming
    ? createPlanReviewer({
        io,
        out: human,
        c,
        pause: () => reporter?.pause(),
        resume: () => reporter?.resume(),
      })
    : undefined;
  const warnings = createModelWarningPrinter(io.stderr, colorsFor(io.stderr, io.env), (write) =>
    reporter ? reporter.aside(write) : write(),
  );
  const stderrColors = colorsFor(io.stderr, io.env);
  const runtime = createRuntime(
    options,
    io.env,
    page ? page(reviewer) : reviewer,
    warnings,
    (message) => io.stderr.write(`${stderrColors.yellow("warning:")} ${terminalText(message)}\n`),
  );

  const follow = async (run: TaskRun, history: readonly RunEvent[] = []): Promise<number> => {
    const live = human.isTTY === true && io.env.CI === undefined;
    const shown: Reporter = live
      ? createTtyReporter(human as NodeJS.WriteStream, c)
      : createLineReporter(human, c);
    reporter = shown;
    for (const event of history) applyEvent(shown.state, event);
    run.on("*", (event) => shown.onEvent(event));
    let report: RunReport;
    try {
      report = await run.result;
    } finally {
      shown.stop();
    }
    const perSubTask = new Map<string, Usage>(shown.state.subTasks.map((s) => [s.id, s.usage]));
    human.write(`${summaryTable(report, perSubTask, c)}\n`);
    if (options.json) io.stdout.write(`${JSON.stringify(toJsonReport(report), null, 2)}\n`);
    // A plan declined at the prompt is "not completed"; only an interrupt is 130.
    if (report.status === "cancelled" && io.signal.aborted) return exitCodes.cancelled;
    return report.status === "completed" ? exitCodes.completed : exitCodes.notCompleted;
  };
  return { human, c, runtime, follow };
}

/** The line a run prints when it has read the project, for `plan`, which logs no event. */
export function printProjectLine(digest: ProjectDigest, out: CliIo["stdout"], c: Colors): void {
  const event = {
    type: "project-digested",
    digest,
    durationMs: 0,
    cached: false,
    runId: "",
    seq: 0,
    time: "",
  } as const;
  out.write(`${eventLines(event, createProgressState(), c).join("\n")}\n`);
}

export function printPlan(plan: Omit<PlanResult, "usage">, out: CliIo["stdout"], c: Colors): void {
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
