import type { AttemptResult } from "@taskledger/core";
import type { Worker } from "bullmq";

/**
 * The limiter every worker is made with. BullMQ honours a queue's rate limit (`rateLimit`) only
 * in workers that have one; this one never limits by itself (a million jobs a second).
 */
export const pausableLimiter = { max: 1_000_000, duration: 1000 };

// The first pause when a provider gave no Retry-After; doubled for each limit in a row.
const firstBackoffMs = 2000;
// The longest pause a backoff reaches (a provider's own Retry-After may ask for longer).
const maxBackoffMs = 60_000;

/**
 * Pauses the whole queue when an attempt a worker ran ends on its provider's rate limit, through
 * BullMQ's own rate limit: no worker of the queue, on any machine, takes a job until it expires.
 * A spent quota does not pause it: waiting does not help there, and the coordinator decides.
 */
export class QueuePause {
  // Limits in a row on this worker, with no other ending between them: the backoff's step.
  private step = 0;

  constructor(
    private readonly worker: Pick<Worker, "rateLimit" | "backend">,
    private readonly random: () => number = Math.random,
  ) {}

  /** Told of each attempt's end; returns how long the queue is paused when this one paused it. */
  async after(result: AttemptResult): Promise<number | undefined> {
    if (result.outcome !== "rate-limited") {
      this.step = 0;
      return undefined;
    }
    if (result.limit?.kind === "quota") return undefined;
    const backoff = Math.min(firstBackoffMs * 2 ** this.step, maxBackoffMs);
    this.step++;
    const pauseMs = Math.round(result.limit?.retryAfterMs ?? backoff * (0.5 + this.random()));
    try {
      // A longer pause another worker set stays: a shorter limit does not let work in sooner.
      const current = await this.worker.backend.getRateLimitTtl(pausableLimiter.max);
      if (current >= pauseMs) return current;
      await this.worker.rateLimit(pauseMs);
      return pauseMs;
    } catch {
      // Redis not answering: the job's own result still goes back; the coordinator waits anyway.
      return undefined;
    }
  }
}
