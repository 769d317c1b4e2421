import { describeError } from "../errors/describe-error.js";
import { AbortedError, PlanReviewError, PlanValidationError } from "../errors/errors.js";
import type { TaskLedger } from "../ledger/task-ledger.js";
import type { PlanReview, PlanReviewDecision, ReviewPlan } from "./plan-review.js";

/** How many answers a review gets before a run gives up on it (a person's typo gets a second go). */
export const maxReviewAnswers = 3;

/** A decision the run can act on: an edit is already validated. */
export type CheckedDecision =
  | { action: "approve" | "edit"; ledger: TaskLedger }
  | { action: "reject"; reason: string | undefined };

/**
 * Asks the host's review hook until it gives a usable decision: an answer that is not one, or an
 * edit that does not validate (`checkEdit` throws), is asked about again with its `problems`, at
 * most `maxReviewAnswers` times; then the run fails, and nothing runs (fail closed). The run's
 * signal ends the wait whatever the hook does; a hook that throws fails with `PlanReviewError`.
 */
export async function askReviewer(
  hook: ReviewPlan,
  review: Omit<PlanReview, "abortSignal" | "problems">,
  signal: AbortSignal,
  checkEdit: (ledger: unknown) => TaskLedger,
): Promise<CheckedDecision> {
  let problems: string[] | undefined;
  let lastError: Error | undefined;
  for (let answers = 0; answers < maxReviewAnswers; answers++) {
    const answer = await untilAborted(
      callHook(hook, { ...review, abortSignal: signal, ...(problems ? { problems } : {}) }),
      signal,
    );
    const fields: Record<string, unknown> =
      typeof answer === "object" && answer !== null ? answer : {};
    const { action, reason } = fields;
    if (action === "approve") return { action, ledger: review.ledger };
    if (action === "reject" && (reason === undefined || typeof reason === "string")) {
      return { action, reason };
    }
    if (action === "edit") {
      try {
        return { action, ledger: checkEdit(fields.ledger) };
      } catch (error) {
        if (!PlanValidationError.isInstance(error)) throw error;
        lastError = error;
        problems = error.issues.map((issue) => issue.message);
        continue;
      }
    }
    problems = [
      `the answer must be { action: "approve" } | { action: "edit", ledger } | { action: "reject", reason?: string }, got ${shortJson(answer)}`,
    ];
    lastError = new PlanReviewError(
      `The plan review answered ${maxReviewAnswers} times with no usable decision; nothing ran. Last: ${problems[0]}`,
    );
  }
  throw lastError as Error;
}

/** The hook's answer; what it throws (synchronously too) becomes a `PlanReviewError`. */
async function callHook(hook: ReviewPlan, review: PlanReview): Promise<PlanReviewDecision> {
  try {
    return await hook(review);
  } catch (error) {
    if (review.abortSignal.aborted)
      throw new AbortedError("The run stopped during its plan review");
    throw new PlanReviewError(`The plan review hook failed: ${describeError(error)}`, {
      cause: error,
    });
  }
}

/** `promise`, or an `AbortedError` as soon as `signal` aborts: a hook that never settles cannot hold the run. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(new AbortedError("The run stopped during its plan review"));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      reject(new AbortedError("The run stopped during its plan review"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function shortJson(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
