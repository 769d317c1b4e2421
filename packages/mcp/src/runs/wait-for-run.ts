import type { LiveRun } from "./live-runs.js";

/** Why a wait ended. */
export type WaitOutcome = "finished" | "awaiting-review" | "timed-out";

export interface WaitOptions {
  timeoutMs: number;
  /** The caller cancelled its call. */
  abortSignal: AbortSignal;
  /**
   * Sends one progress notification: sub-tasks done (strictly growing, so a notice without a
   * newly done sub-task adds a thousandth) of all, none before there is a plan.
   */
  progress: ((done: number, total: number | undefined) => Promise<void>) | undefined;
  /** Sub-tasks done and in the plan now. */
  position: () => { done: number; total: number };
  /** A notice at least this often while nothing changes (a heartbeat for clients' timeouts). */
  heartbeatMs?: number;
}

// Agent events come many a second; a caller needs at most one notice this often.
const minGapMs = 500;

/**
 * Waits until the run ends, asks for a plan review, or `timeoutMs` passes, sending progress
 * notifications on changes and as a heartbeat. Resolves with why it stopped waiting.
 */
export async function waitForRun(live: LiveRun, options: WaitOptions): Promise<WaitOutcome> {
  if (live.ended) return "finished";
  if (needsAnswer(live)) return "awaiting-review";
  let lastSent = 0;
  let lastValue = -1;
  let sending = false;
  const send = () => {
    if (!options.progress || sending) return;
    const now = Date.now();
    if (now - lastSent < minGapMs) return;
    // Progress must grow with every notification (MCP), and say how far the run is.
    const { done, total } = options.position();
    const value = Math.max(Math.round((lastValue + 0.001) * 1000) / 1000, done);
    lastValue = value;
    lastSent = now;
    sending = true;
    options.progress(value, total > 0 ? Math.max(total, value) : undefined).finally(() => {
      sending = false;
    });
  };
  return await new Promise<WaitOutcome>((resolve) => {
    const cleanups: (() => void)[] = [];
    const finish = (outcome: WaitOutcome) => {
      for (const cleanup of cleanups) cleanup();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish("timed-out"), options.timeoutMs);
    const heartbeat = setInterval(send, options.heartbeatMs ?? 5000);
    // A form the user dismissed leaves the review to the caller: looked at a few times a second.
    const check = setInterval(() => {
      if (needsAnswer(live)) finish("awaiting-review");
    }, 250);
    cleanups.push(
      () => clearTimeout(timer),
      () => clearInterval(heartbeat),
      () => clearInterval(check),
    );
    cleanups.push(live.run.on("*", send));
    cleanups.push(
      live.reviews.onChange(() => {
        if (needsAnswer(live)) finish("awaiting-review");
      }),
    );
    const onAbort = () => finish("timed-out");
    options.abortSignal.addEventListener("abort", onAbort, { once: true });
    cleanups.push(() => options.abortSignal.removeEventListener("abort", onAbort));
    live.run.result.then(
      () => finish("finished"),
      () => finish("finished"),
    );
    send();
  });
}

/** A review waits and no form asks the user about it: the caller must answer. */
function needsAnswer(live: LiveRun): boolean {
  return live.reviews.pending !== undefined && !live.asking;
}
