import {
  AbortedError,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  ExecutorError,
  QueueError,
} from "@taskledger/core";
import { defaultSetupTimeoutMs, git } from "@taskledger/git-workspace";
import { type Job, Queue, QueueEvents, Worker } from "bullmq";
import { Redis } from "ioredis";
import {
  type AttemptJobData,
  type AttemptJobProgress,
  type AttemptJobResult,
  attemptJobId,
  attemptRefs,
  cancelChannel,
  defaultQueueName,
} from "../job/attempt-job.js";
import { interruptedResult, NoWorkerError } from "../job/interrupted-result.js";
import { closeWithin } from "../redis/close-within.js";
import { RedisHealth } from "../redis/redis-health.js";
import { redactRedisUrl, redisOptionsFromUrl } from "../redis/redis-url.js";
import { type Finished, finishOf } from "./job-finish.js";
import { PushedStarts } from "./pushed-starts.js";
import { remoteGit } from "./remote-git.js";
import { checkOutWork } from "./returned-work.js";

export interface QueueExecutorOptions {
  /** `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. */
  redis: string;
  /** The git remote coordinator and workers share (a URL or a path). */
  remote: string;
  /** The run's agent model, sent with every job an escalation does not give another. */
  agentModel?: string;
  /** The run's setup command, which every worker runs in its worktree before the agent. */
  setup?: { command: string; timeoutMs?: number };
  /** Default `taskledger-attempts`. */
  queueName?: string;
  /** How long Redis may stay unreachable before the wait fails with a `QueueError`; default 30 s. */
  unreachableAfterMs?: number;
  /** How long a cancelled attempt's worker has to stop its processes and answer; default 20 s. */
  cancelGraceMs?: number;
  /**
   * How often the coordinator looks for attempts whose worker died (BullMQ's stalled check, which
   * live workers run too), so one is noticed even when no worker is left; default 30 s.
   */
  stalledCheckMs?: number;
  /** How long finished jobs stay in Redis (a resumed coordinator takes their result); default 1 day. */
  keepJobsMs?: number;
  /**
   * How long an attempt may wait with no worker running before it fails, saying no worker took
   * it (attempts waiting for busy workers wait on); default 5 minutes.
   */
  workerWaitMs?: number;
}

/**
 * An attempt's commit whose objects pack into this much travels in its result through Redis, not
 * through the remote: most attempts change a few files (kilobytes). Past it, a push and a fetch.
 * Bounded low: a result stays in Redis (the job and its events stream) for a day.
 */
export const maxInlineWorkBytes = 64 * 1024;

/** How long an attempt waits with no worker running, unless told otherwise. */
export const defaultWorkerWaitMs = 300_000;

/** An executor that runs each attempt as a BullMQ job on a `taskledger worker`. */
export interface QueueExecutor extends Executor {
  /** Connects to Redis; a `QueueError` after `unreachableAfterMs` when it does not answer. */
  ready(abortSignal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export function createQueueExecutor(options: QueueExecutorOptions): QueueExecutor {
  const queueName = options.queueName ?? defaultQueueName;
  const boundMs = options.unreachableAfterMs ?? 30_000;
  const connection = {
    ...redisOptionsFromUrl(options.redis),
    // BullMQ's blocking connections need it; the health watch bounds the wait instead.
    maxRetriesPerRequest: null,
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
  };
  const where = redactRedisUrl(options.redis);
  const keepSeconds = Math.round((options.keepJobsMs ?? 86_400_000) / 1000);
  const listeners = new Map<string, ExecuteOptions["onEvent"]>();
  const onStalled = new Map<string, () => void>();
  const onActive = new Map<string, () => void>();
  const workerWaitMs = options.workerWaitMs ?? defaultWorkerWaitMs;
  const pushedStarts = new PushedStarts();
  let opened:
    | {
        queue: Queue;
        events: QueueEvents;
        checker: Worker;
        publisher: Redis;
        health: RedisHealth;
        own: readonly Redis[];
      }
    | undefined;

  let opening: Promise<NonNullable<typeof opened>> | undefined;
  const open = (abortSignal?: AbortSignal) => {
    opening ??= connect(abortSignal).catch((error: unknown) => {
      opening = undefined;
      throw error;
    });
    return opening;
  };
  // BullMQ's clients are made only once Redis answered: ones that never connected do not close.
  const connect = async (abortSignal?: AbortSignal) => {
    const publisher = new Redis({ ...connection, lazyConnect: true });
    const health = new RedisHealth(publisher, boundMs, where);
    publisher.connect().catch(() => {});
    try {
      await health.ping(abortSignal);
    } catch (error) {
      health.close();
      publisher.disconnect();
      throw error;
    }
    // Connections of our own, so they can be dropped when Redis stops answering later.
    const own = [new Redis(connection), new Redis(connection), new Redis(connection)] as const;
    for (const client of own) client.on("error", () => {});
    const queue = new Queue(queueName, { connection: own[0] });
    const events = new QueueEvents(queueName, { connection: own[1] });
    // Takes no job: it only fails jobs whose worker died, as the workers' own checks do.
    const checker = new Worker(queueName, null, {
      connection: own[2],
      autorun: false,
      maxStalledCount: 0,
      stalledInterval: options.stalledCheckMs ?? 30_000,
      // Named, so counting the workers that could take a job leaves coordinators out.
      name: checkerName,
    });
    checker.on("error", () => {});
    void checker.startStalledCheckTimer().catch(() => {});
    queue.on("error", () => {});
    // Each attempt waiting on its job listens for the queue's closing: as many as run at once.
    queue.setMaxListeners(0);
    events.on("error", () => {});
    // Each attempt waiting on its job listens for its end: as many as run at once.
    events.setMaxListeners(0);
    // BullMQ moves a stalled job back to wait, to be failed by the next worker that takes it: the
    // coordinator counts it interrupted at once, without waiting for a worker.
    events.on("stalled", ({ jobId }) => onStalled.get(jobId)?.());
    events.on("active", ({ jobId }) => onActive.get(jobId)?.());
    events.on("progress", ({ jobId, data }) => {
      const event = (data as Partial<AttemptJobProgress> | undefined)?.event;
      if (event) listeners.get(jobId)?.(event);
    });
    opened = { queue, events, checker, publisher, health, own };
    return opened;
  };

  const cancel = async (job: Job, graceMs: number) => {
    const { publisher, events } = opened!;
    const jobId = job.id!;
    await publisher.publish(cancelChannel(queueName), jobId).catch(() => {});
    // A job no worker took yet is simply removed; a running one is locked and stays.
    await job.remove().catch(() => {});
    return finishOf(job, opened!.queue, events, graceMs).catch(() => undefined);
  };

  return {
    // A job outlives the coordinator that sent it: a resumed run asks for the same one.
    resumesAttempts: true,
    ready: async (abortSignal) => {
      await open(abortSignal);
    },

    async run(prompt, execute): Promise<AttemptResult> {
      const { runId, subTask, attempt, cwd, abortSignal } = execute;
      if (!runId)
        throw new ExecutorError("The queue executor needs the run id.", { isRetryable: false });
      const started = performance.now();
      const { queue, events, health } = await open(abortSignal);
      await health.ping(abortSignal);
      // One git process for both: the run's directory inside the repository, then the commit.
      const [prefix = "", start = ""] = (
        await git(["rev-parse", "--show-prefix", "--verify", "HEAD"], { cwd, abortSignal }).catch(
          (cause) => {
            throw new QueueError(
              "needs-worktree",
              `${cwd} is not a worktree of a git repository: attempts sent to workers need worktree isolation.`,
              { cause },
            );
          },
        )
      ).stdout.split("\n");
      const refs = attemptRefs(runId, subTask.id, attempt);
      // Attempts from a commit already on the remote name the ref holding it: no push.
      const pushStart = () =>
        remoteGit(
          cwd,
          ["push", "-q", "--force", options.remote, `${start}:${refs.start}`],
          abortSignal,
        );
      const startRef = await pushedStarts
        .refFor(start, refs.start, pushStart)
        .catch((error: unknown) => {
          if (abortSignal.aborted) throw error;
          // Another attempt's push of the same commit was cancelled or failed: this one pushes.
          return pushedStarts.refFor(start, refs.start, pushStart);
        });
      const jobId = attemptJobId(runId, subTask.id, attempt);
      const data: AttemptJobData = {
        runId,
        subTask,
        attempt,
        prompt,
        remote: options.remote,
        start,
        startRef,
        workRef: refs.work,
        inlineWorkBytes: maxInlineWorkBytes,
        prefix,
        ...((execute.agentModel ?? options.agentModel)
          ? { agentModel: execute.agentModel ?? options.agentModel }
          : {}),
        ...(execute.readOnly ? { readOnly: true } : {}),
        ...(options.setup
          ? {
              setup: {
                command: options.setup.command,
                timeoutMs: options.setup.timeoutMs ?? defaultSetupTimeoutMs,
              },
            }
          : {}),
      };
      listeners.set(jobId, execute.onEvent);
      let stopWatching = () => {};
      let waitTimer: NodeJS.Timeout | undefined;
      // Set once the attempt's wait is over: no lookup is asked again after it.
      let settled = false;
      // Removed once the attempt is over: a signal aborted later (the run's end, a cancel of the
      // others) must not cancel a finished job, which a resumed coordinator asks for again.
      let onAbort = () => {};
      try {
        let onReconnect = () => {};
        // Redis gone past the bound ends every wait below with a QueueError instead of a hang.
        const lost = new Promise<never>((_, reject) => {
          stopWatching = health.watch(reject, () => onReconnect());
        });
        lost.catch(() => {});
        // The same id again (a resumed coordinator) finds the job there and waits for it.
        const job = await Promise.race([
          (async () =>
            (await queue.getJob(jobId)) ??
            (await queue.add("attempt", data, {
              jobId,
              attempts: 1,
              removeOnComplete: { age: keepSeconds },
              removeOnFail: { age: keepSeconds },
            })))(),
          lost,
        ]);
        const finished = await new Promise<Finished>((resolve, reject) => {
          lost.catch(reject);
          const lostJob = () =>
            resolve({ ok: false, error: new Error("Redis restarted and lost the job") });
          // Redis restarted without the job (no persistence): it will never finish. A lookup that
          // fails (Redis not answering yet) is asked again, a bounded number of times.
          const checkLost = (tries: number) =>
            queue.getJobState(jobId).then(
              (state) => state === "unknown" && lostJob(),
              () => tries > 0 && !settled && setTimeout(() => checkLost(tries - 1), 1000).unref(),
            );
          onReconnect = () => void checkLost(10);
          onAbort = () => {
            cancel(job, options.cancelGraceMs ?? 20_000).then(
              (value) =>
                value
                  ? resolve({ ok: true, output: value as AttemptJobResult })
                  : reject(new AbortedError()),
              reject,
            );
          };
          // Waiting is bounded only while no worker runs at all: busy workers take it in time.
          const noWorker = async () => {
            waitTimer = undefined;
            const looked = await Promise.all([job.getState(), workersRunning(queue)]).catch(
              () => undefined,
            );
            // A failed lookup keeps the bound: asked again after the same wait.
            if (looked === undefined) return settled || armWait();
            const [state, workers] = looked;
            if (state === "unknown") return lostJob();
            if (state !== "waiting" && state !== "prioritized") return;
            if (workers > 0) {
              armWait();
              return;
            }
            await job.remove();
            resolve({ ok: false, error: new NoWorkerError(jobId, workerWaitMs, where) });
          };
          const armWait = () => {
            waitTimer = setTimeout(() => noWorker().catch(() => {}), workerWaitMs);
          };
          let taken = false;
          onActive.set(jobId, () => {
            taken = true;
            clearTimeout(waitTimer);
            execute.onEvent?.({ type: "executor-status", status: "running" });
          });
          job.getState().then(
            (state) => {
              if (state !== "waiting" && state !== "prioritized") return;
              if (taken) return;
              execute.onEvent?.({ type: "executor-status", status: "waiting-for-worker" });
              armWait();
            },
            // Not known: bounded all the same (the wait's own lookup decides).
            () => taken || settled || armWait(),
          );
          onStalled.set(jobId, () => {
            resolve({ ok: false, error: new Error("its worker stopped (the job's lock expired)") });
            // Waiting with a failure mark, it would only be failed when a worker takes it.
            job.remove().catch(() => {});
          });
          if (abortSignal.aborted) onAbort();
          else abortSignal.addEventListener("abort", onAbort, { once: true });
          finishOf(job, queue, events).then(
            (value) => resolve({ ok: true, output: value as AttemptJobResult }),
            (error: unknown) => {
              if (!abortSignal.aborted) resolve({ ok: false, error });
            },
          );
        });
        if (!finished.ok) return interruptedResult(jobId, finished.error, started);
        const { output } = finished;
        // The worker's tree in the attempt's own directory: capturing it is then the same as local.
        await checkOutWork(cwd, output, options.remote, refs.work, abortSignal);
        return {
          ...output.result,
          details: {
            ...output.result.details,
            worker: output.worker,
            ...(output.waitedMs === undefined ? {} : { waitedForWorkerMs: output.waitedMs }),
          },
        };
      } finally {
        settled = true;
        abortSignal.removeEventListener("abort", onAbort);
        clearTimeout(waitTimer);
        stopWatching();
        listeners.delete(jobId);
        onStalled.delete(jobId);
        onActive.delete(jobId);
      }
    },

    async close() {
      await opening?.catch(() => {});
      opening = undefined;
      if (!opened) return;
      const { queue, events, checker, publisher, health, own } = opened;
      opened = undefined;
      health.close();
      publisher.disconnect();
      // A graceful close waits for Redis; without it, connections are dropped after a moment.
      await closeWithin([checker, queue, events], own, closeBoundMs);
    },
  };
}

// How long closing waits for Redis to answer before dropping the connections.
const closeBoundMs = 3000;

// The coordinator's own stalled checker is a BullMQ worker by that name; it takes no job.
const checkerName = "taskledger-coordinator";

/** Workers connected to the queue that take jobs (coordinators' checkers left out); 0 when unknown. */
async function workersRunning(queue: Queue): Promise<number> {
  const clients = await queue.getWorkers().catch(() => []);
  return clients.filter((client) => !client.rawname?.endsWith(`:w:${checkerName}`)).length;
}
