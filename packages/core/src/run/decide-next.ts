import { incompleteReasonOf, type ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTaskState } from "../log/run-state.js";
import type { SubTaskFailure } from "../report/run-report.js";

/** What the escalation ladder does after an incomplete attempt. */
export type LadderDecision =
  | { kind: "retry" }
  | { kind: "alternate-model"; model: string; reason: string }
  | { kind: "candidates"; reason: string }
  | { kind: "replan"; reason: string }
  | { kind: "fail"; reason: string; code: SubTaskFailure };

export interface LadderOptions {
  maxRetries: number;
  alternateAgentModels: readonly string[];
  /** One round of parallel candidates once retries on the executor's model fail (`bestOf.ladder`). */
  candidatesRung?: boolean;
  /** Replanning is possible only with a model to ask. */
  replan: { enabled: boolean; maxPerSubTask: number; maxPerRun: number };
  /** Replans already applied or under way in the run. */
  replansInRun: number;
  /** Why the run is stopping (a cancel, a budget, a rejected plan), when it is. */
  stopReason: string | undefined;
}

/**
 * The ladder, as a value: retry on the same model with feedback, then (with `candidatesRung`) one
 * round of parallel candidates, then one attempt on each alternate agent model, then a replan of the sub-task and its dependents, then fail. `sub` is
 * the sub-task as its records leave it after the attempt `entry` judged.
 */
export function decideNext(
  sub: Pick<
    SubTaskState,
    "attempts" | "stepAttempts" | "agentModel" | "alternatesUsed" | "replans" | "finished"
  > &
    Partial<Pick<SubTaskState, "rounds" | "onCandidatesRung">>,
  entry: ProgressEntry,
  options: LadderOptions,
): LadderDecision {
  const attempt = sub.attempts;
  const detail = entry.feedback || entry.summary;
  // A missing binary or a bad setup fails every attempt alike: no point trying again.
  if (sub.finished?.result.retryable === false) {
    return {
      kind: "fail",
      reason: `The executor cannot run attempts: ${sub.finished.result.error ?? "not retryable"}`,
      code: "executor-unavailable",
    };
  }
  if (options.stopReason !== undefined) {
    return {
      kind: "fail",
      reason: `Incomplete after ${attempt} attempt(s); not retried because ${options.stopReason}. ${detail}`,
      code: "run-stopping",
    };
  }
  const why = incompleteReasonOf(entry);
  // An alternate model gets one attempt; the executor's own model gets the retries.
  // The candidates rung is one round: no retries of its own.
  const retriesInStep =
    sub.agentModel === undefined && !sub.onCandidatesRung ? options.maxRetries : 0;
  // The same attempt again would cost the same and end the same: a stuck one moves the ladder on.
  if (why !== "stuck" && sub.stepAttempts <= retriesInStep) return { kind: "retry" };
  const reason =
    why === "stuck"
      ? `No progress: attempt ${attempt} repeated the previous one. ${entry.feedback}`
      : `Incomplete after ${attempt} attempt(s). ${detail}`;
  // A judge that could not answer is no reason to change the agent model or the plan.
  const code = why === "stuck" ? "stuck" : why === "judge-unavailable" ? why : "incomplete";
  if (why === "judge-unavailable") return { kind: "fail", reason, code };
  // Candidates before another model: once per sub-task, on the executor's own model.
  if (
    options.candidatesRung &&
    sub.agentModel === undefined &&
    !sub.onCandidatesRung &&
    (sub.rounds?.length ?? 0) === 0
  )
    return { kind: "candidates", reason };
  const alternate = options.alternateAgentModels[sub.alternatesUsed];
  if (alternate !== undefined) return { kind: "alternate-model", model: alternate, reason };
  const { replan } = options;
  if (
    replan.enabled &&
    sub.replans < replan.maxPerSubTask &&
    options.replansInRun < replan.maxPerRun
  ) {
    return { kind: "replan", reason };
  }
  return { kind: "fail", reason, code };
}
