import { describeError } from "./describe-error.js";
import { outcomeEvaluator } from "./evaluator.js";
import type { AttemptResult } from "./executor.js";
import type { ProgressEntry } from "./progress-entry.js";
import type { RunContext } from "./run-context.js";
import type { SubTaskState } from "./run-state.js";
import type { Check } from "./sub-task.js";
import { emptyUsage } from "./usage.js";

/** Runs the evaluator on an attempt; a throw becomes an incomplete entry that says why. */
export async function evaluateAttempt(
  ctx: RunContext,
  s: SubTaskState,
  attempt: number,
  result: AttemptResult,
  cwd: string,
): Promise<ProgressEntry> {
  const { input, options, stop } = ctx;
  const before = s.previous;
  // No attempt can succeed (a refused config, no binary): the ladder fails it; a judge costs a call.
  if (result.retryable === false) {
    return incompleteEntry(
      `The executor cannot run attempts: ${result.error ?? "not retryable"}`,
      "executor",
      "not-finished",
    );
  }
  // Nothing of the agent's to judge: a judge call would only restate the executor's error.
  if (result.outcome === "error" && result.infrastructureError) {
    return incompleteEntry(
      `The attempt did not run to its end, through no fault of the agent: ${result.error ?? "an infrastructure error"}. ` +
        "Check what is already done and finish the rest.",
      "executor",
      "interrupted",
    );
  }
  try {
    return await options.evaluator.evaluate(
      {
        runId: input.runId,
        request: input.request,
        subTask: { ...s.subTask, checks: checksOf(ctx, s, result) },
        attempt,
        result,
        cwd,
        ...(before
          ? {
              previous: {
                attempt: before.attempt,
                ...(before.entry.fingerprint ? { fingerprint: before.entry.fingerprint } : {}),
              },
            }
          : {}),
      },
      {
        abortSignal: stop.signal,
        ...(options.executor.guard
          ? { guardProcess: options.executor.guard.bind(options.executor) }
          : {}),
      },
    );
  } catch (error) {
    const reason = `The evaluator failed: ${describeError(error)}`;
    return incompleteEntry(reason, "evaluator", "evaluator-failed");
  }
}

/** Documentation and notes: a change to them alone is no reason to run the project's tests. */
function isProse(file: string): boolean {
  return /\.(md|mdx|markdown|txt|rst|adoc)$/i.test(file) || /(^|\/)docs\//.test(file);
}

/**
 * The sub-task's own checks, the run's (a project's typecheck, every sub-task's), and, once the
 * attempt changed files other than documentation, the project's test and typecheck commands the
 * digest found, each once.
 */
function checksOf(ctx: RunContext, s: SubTaskState, result: AttemptResult): Check[] {
  const { settings, state, options } = ctx;
  const checks = [...s.subTask.checks, ...(settings.checks ?? [])];
  const project =
    settings.projectChecks !== false &&
    s.subTask.projectChecks !== false &&
    options.evaluator !== outcomeEvaluator &&
    result.filesChanged.some((file) => !isProse(file))
      ? (state.project?.commands ?? []).filter((c) => c.kind !== "lint")
      : [];
  const seen = new Set(checks.map((c) => (c.type === "command" ? c.argv.join("\0") : "")));
  for (const command of project) {
    if (seen.has(command.argv.join("\0"))) continue;
    seen.add(command.argv.join("\0"));
    checks.push({ type: "command", argv: command.argv, timeoutMs: null });
  }
  return checks;
}

/** An entry the run writes itself when there is no evaluation to be had. */
function incompleteEntry(
  reason: string,
  source: string,
  incomplete: ProgressEntry["incomplete"],
): ProgressEntry {
  return {
    completed: false,
    summary: reason,
    outputData: "",
    feedback: reason,
    evidence: [{ source, passed: false, detail: reason }],
    usage: emptyUsage(),
    incomplete,
  };
}
