import type { EventEmitter } from "node:events";
import type { Job, Queue, QueueEvents } from "bullmq";
import type { AttemptJobResult } from "../job/attempt-job.js";

/** How a coordinator's wait for its job ended. */
export type Finished = { ok: true; output: AttemptJobResult } | { ok: false; error: unknown };

/**
 * The job's return value once it completes; a rejection once it fails, the queue closes or
 * `timeoutMs` passes. BullMQ's `waitUntilFinished` can reject unhandled when the connection closes
 * just after the job finished (its check runs in an async promise executor); here all is handled.
 */
export function finishOf(
  job: Job,
  queue: Queue,
  events: QueueEvents,
  timeoutMs?: number,
): Promise<unknown> {
  const jobId = job.id!;
  // BullMQ emits it as it closes, though its types leave it out.
  const closing = queue as unknown as EventEmitter;
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      clearTimeout(timer);
      events.off("completed", onCompleted);
      events.off("failed", onFailed);
      closing.off("closing", onClosing);
    };
    const finish = (outcome: { value: unknown } | { error: Error }) => {
      stop();
      if ("error" in outcome) reject(outcome.error);
      else resolve(outcome.value);
    };
    const onCompleted = (args: { jobId: string; returnvalue: unknown }) => {
      if (args.jobId === jobId) finish({ value: args.returnvalue });
    };
    const onFailed = (args: { jobId: string; failedReason: string }) => {
      if (args.jobId === jobId) finish({ error: new Error(args.failedReason) });
    };
    const onClosing = () => finish({ error: new Error("the queue is closing") });
    events.on("completed", onCompleted);
    events.on("failed", onFailed);
    closing.on("closing", onClosing);
    if (timeoutMs !== undefined)
      timer = setTimeout(() => finish({ error: new Error("no answer in time") }), timeoutMs);
    // It may have ended before these listeners were there: once the events are heard, look.
    events
      .waitUntilReady()
      .then(() => queue.getJob(jobId))
      .then(async (found) => {
        const state = await found?.getState();
        if (state === "completed") finish({ value: found?.returnvalue });
        else if (state === "failed") finish({ error: new Error(found?.failedReason) });
      })
      .catch(() => {});
  });
}
