import { describeError } from "../errors/describe-error.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { Check } from "../ledger/sub-task.js";
import { candidateOf, type SubTaskState } from "../log/run-state.js";
import type { AttemptResult } from "../ports/executor.js";
import type { RunContext } from "../run/run-context.js";
import { emptyUsage } from "../usage/usage.js";
import { outcomeEvaluator } from "./outcome-evaluator.js";
import { awaitProjectBaseline, projectCommandChecks } from "./project-baseline.js";

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
  // Before the project's commands first check an attempt: which of them pass with no change.
  if (wantsProjectChecks(ctx, s, result)) await awaitProjectBaseline(ctx);
  try {
    return await options.evaluator.evaluate(
      {
        runId: input.runId,
        request: input.request,
        subTask: { ...s.subTask, checks: evaluationChecks(ctx, s, result) },
        attempt,
        result,
        cwd,
        // A candidate that failed its checks has lost: no judge call for a known verdict.
        ...(candidateOf(s, attempt) ? { judge: "when-checks-pass" as const } : {}),
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
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
        governModel: (model) => ctx.limits.governed(model),
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

/** The project's commands check this attempt: it changed more than documentation. */
function wantsProjectChecks(ctx: RunContext, s: SubTaskState, result: AttemptResult): boolean {
  return (
    s.subTask.projectChecks !== false &&
    ctx.options.evaluator !== outcomeEvaluator &&
    result.filesChanged.some((file) => !isProse(file)) &&
    projectCommandChecks(ctx).length > 0
  );
}

/**
 * The sub-task's own checks, the run's (a project's typecheck, every sub-task's), and, once the
 * attempt changed files other than documentation, the project's test and typecheck commands the
 * digest found, each once.
 */
export function evaluationChecks(ctx: RunContext, s: SubTaskState, result: AttemptResult): Check[] {
  const { settings, state } = ctx;
  const checks = [...s.subTask.checks, ...(settings.checks ?? [])];
  const key = (argv: readonly string[]) => argv.join("\0");
  // A command that failed before any change fails every sub-task alike: it checks none.
  const failing = new Set(
    (state.baseline ?? []).filter((run) => !run.passed).map((run) => key(run.argv)),
  );
  const project = wantsProjectChecks(ctx, s, result) ? projectCommandChecks(ctx) : [];
  const seen = new Set(checks.map((c) => (c.type === "command" ? key(c.argv) : "")));
  for (const check of project) {
    if (check.type !== "command" || seen.has(key(check.argv)) || failing.has(key(check.argv)))
      continue;
    seen.add(key(check.argv));
    checks.push(check);
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
