import type { TaskLedger, TaskLedgerInput } from "../ledger/task-ledger.js";

/** What a person (or a host's policy) is asked to approve before work starts or changes. */
export interface PlanReview {
  runId: string;
  request: string;
  /** `plan`: before anything runs; `replan`: a failed sub-task and its dependents are to be replaced. */
  kind: "plan" | "replan";
  /** The ledger that would run: the whole plan, or, for a replan, the plan after the change. */
  ledger: TaskLedger;
  /** For a replan: the sub-tasks being replaced, and why. */
  replaced?: string[];
  reason?: string;
  /**
   * Set when the hook is asked again: what was wrong with its last answer (an edit that does not
   * validate, an answer that is no decision). A review gets at most 3 answers.
   */
  problems?: string[];
  /** The run's signal: aborted when the run is cancelled, which also ends the wait for an answer. */
  abortSignal: AbortSignal;
}

/**
 * `approve` runs the ledger as shown; `edit` runs the host's version (reordered, trimmed, extended,
 * criteria changed), validated like a generated plan; `reject` stops the run (a plan) or drops the
 * change (a replan: the failed sub-task then fails).
 */
export type PlanReviewDecision =
  | { action: "approve" }
  | { action: "edit"; ledger: TaskLedgerInput }
  | { action: "reject"; reason?: string };

export type ReviewPlan = (review: PlanReview) => PlanReviewDecision | Promise<PlanReviewDecision>;
