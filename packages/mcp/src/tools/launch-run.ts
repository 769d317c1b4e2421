import type { ReviewPlan, RunState, TaskRun } from "@taskledger/core";
import { describeError } from "@taskledger/core";
import { firstAnswer, ReviewBroker } from "@taskledger/ui";
import type { LiveRun } from "../runs/live-runs.js";
import { canElicit, elicitReview } from "./elicit-review.js";
import type { ToolContext } from "./tool-context.js";

/** Starts (or resumes) a run in `directory` as one of this server's, reviewed when `review`. */
export async function launch(
  ctx: ToolContext,
  directory: string,
  review: boolean,
  begin: (options: { abortSignal: AbortSignal; reviewPlan?: ReviewPlan }) => Promise<TaskRun>,
  before?: RunState,
): Promise<LiveRun> {
  ctx.runs.checkRoom();
  const controller = new AbortController();
  const reviews = new ReviewBroker(ctx.host.maxSubTasks);
  const registered: { current?: LiveRun } = {};
  const idle = ctx.idle.hold();
  const run = await begin({
    abortSignal: controller.signal,
    ...(review ? { reviewPlan: reviewerFor(ctx, reviews, registered) } : {}),
  }).catch((error: unknown) => {
    idle();
    throw error;
  });
  void run.result.then(idle, idle);
  const live = ctx.runs.add({ runId: run.runId, run, directory, before, controller, reviews });
  registered.current = live;
  live.run.result.then(
    (report) => ctx.log(`run ${live.runId} ended: ${report.status}`),
    (error: unknown) => ctx.log(`run ${live.runId} failed: ${describeError(error)}`),
  );
  return live;
}

/**
 * The review of one run: the client's form when it has one, raced with the answer tool; `asking`
 * is set while the form is open. `live` is filled in once the run is registered.
 */
function reviewerFor(ctx: ToolContext, reviews: ReviewBroker, live: { current?: LiveRun }) {
  const server = ctx.mcp.server;
  if (!canElicit(server)) return reviews.reviewPlan;
  const form = elicitReview(server, ctx.reviewTimeoutMs, ctx.secrets);
  const raced = firstAnswer(reviews.reviewPlan, async (review) => {
    try {
      return await form(review);
    } catch (error) {
      if (!review.abortSignal.aborted)
        ctx.log(
          `the review form of run ${review.runId} got no answer (${describeError(error)}); answer_plan_review can answer it`,
        );
      throw error;
    } finally {
      if (live.current) live.current.asking = false;
    }
  });
  return (review: Parameters<ReviewPlan>[0]) => {
    // Before the question reaches the broker, so no wait takes it for the caller's to answer.
    if (live.current) live.current.asking = true;
    return raced(review);
  };
}
