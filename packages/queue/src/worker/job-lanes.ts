import { setTimeout as sleep } from "node:timers/promises";
import type { Job, Worker } from "bullmq";

// The longest a lane rests on a rate limit before asking Redis again (BullMQ's own bound).
const maxRestMs = 30_000;
// A lane given no job while the queue is not limited asks again after this.
const minRestMs = 50;

/** What a lane's job gives back once its lane is free again: the rest of it, ending in its result. */
export interface LaneJob<R> {
  /** The job's return value (it completes) or a rejection (it fails). */
  result: Promise<R>;
}

export interface JobLanesOptions<D, R> {
  /** Jobs at once. */
  lanes: number;
  /** The worker's lock duration: each job's lock is renewed at half of it until its result is in. */
  lockDurationMs: number;
  /**
   * Runs a job up to the point where its lane can start the next one (the agent ended, its
   * worktree free again); what is left (pushing the work) goes on in `result` beside the next job.
   */
  run(job: Job<D, R>, signal: AbortSignal): Promise<LaneJob<R>>;
  /**
   * How long the queue's rate limit still holds (0 when none): a lane given no job waits that
   * long before asking again, since BullMQ then answers at once with no job.
   */
  limitedForMs?(): Promise<number>;
}

export interface JobLanes {
  /** Cancels a running job: its signal is aborted, and it ends with what it has. */
  cancel(jobId: string): void;
  /**
   * Takes no more jobs, cancels the running ones and waits (at most `boundMs`) until their results
   * are in Redis. The worker is closed after this; that ends a lane's wait for a job.
   */
  stop(boundMs: number): Promise<void>;
}

/**
 * Takes jobs from a BullMQ worker made without a processor, `lanes` at a time. A lane takes its
 * next job as soon as the last one's `run` returns, while that job's result is still on its way:
 * BullMQ's own loop fetches only once the whole job has returned, so every job change would wait
 * for the push of the last one's work.
 */
export function startJobLanes<D, R>(
  worker: Worker<D, R>,
  options: JobLanesOptions<D, R>,
): JobLanes {
  const running = new Map<string, AbortController>();
  // Every job's work, from taken to its result in Redis: stopping waits for these.
  const busy = new Set<Promise<unknown>>();
  let stopping = false;
  // Ends the lanes' rests when the worker stops.
  const stopped = new AbortController();
  let tokens = 0;
  // BullMQ keeps one blocking wait per worker: lanes ask for a job one after another.
  let asking: Promise<unknown> = Promise.resolve();
  const nextJob = (token: string): Promise<Job<D, R> | undefined> => {
    const taken = asking.then(() => worker.getNextJob(token, { block: true }));
    asking = taken.catch(() => {});
    return taken;
  };
  const track = (work: Promise<unknown>) => {
    busy.add(work);
    void work.finally(() => busy.delete(work));
  };

  /** Runs `job` until its lane is free; `done` settles once its result is in Redis. */
  const start = async (job: Job<D, R>, token: string): Promise<{ done: Promise<void> }> => {
    const jobId = job.id as string;
    const controller = new AbortController();
    running.set(jobId, controller);
    // Taken while the worker was stopping: it ends at once, as if cancelled.
    if (stopping) controller.abort();
    const renew = setInterval(() => {
      job.extendLock(token, options.lockDurationMs).catch(() => {});
    }, options.lockDurationMs / 2);
    const lane = options.run(job, controller.signal);
    const done = lane
      .then((ran) => ran.result)
      .then(
        (value) => job.moveToCompleted(value, token, false),
        (error: unknown) =>
          job.moveToFailed(error instanceof Error ? error : new Error(String(error)), token, false),
      )
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        clearInterval(renew);
        running.delete(jobId);
      });
    track(done);
    await lane.catch(() => {});
    return { done };
  };

  /** After no job: while the queue is rate-limited, until it expires (asked again past 30 s). */
  const rest = async () => {
    const limitedMs = (await options.limitedForMs?.().catch(() => 0)) ?? 0;
    // Not limited by Redis's clock: a moment all the same, so a worker's own view never spins.
    const ms = limitedMs > 0 ? Math.min(limitedMs, maxRestMs) : minRestMs;
    await sleep(ms, undefined, { signal: stopped.signal, ref: false }).catch(() => {});
  };

  const lane = async () => {
    let previous: Promise<void> = Promise.resolve();
    while (!stopping) {
      const token = `${worker.id}:${tokens++}`;
      let job: Job<D, R> | undefined;
      try {
        job = await nextJob(token);
      } catch {
        // Redis not answering: its client reconnects; ask again after a moment.
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        continue;
      }
      if (!job) {
        await rest();
        continue;
      }
      const { done } = await start(job, token);
      // At most one result on its way per lane, beside the running job.
      await previous;
      previous = done;
    }
    await previous;
  };
  for (let i = 0; i < options.lanes; i++) void lane();

  return {
    cancel(jobId) {
      running.get(jobId)?.abort();
    },
    async stop(boundMs) {
      stopping = true;
      stopped.abort();
      for (const controller of running.values()) controller.abort();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, boundMs);
      });
      await Promise.race([Promise.allSettled([...busy]), late]);
      clearTimeout(timer);
    },
  };
}
