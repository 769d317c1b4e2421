import { rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import {
  type AttemptResult,
  createProcessDir,
  describeError,
  type Executor,
  InvalidConfigError,
  type ProviderLimit,
  type Sandbox,
  sweepDeadProcessDirs,
} from "@taskledger/core";
import { holdGitRunner, runSetupCommand } from "@taskledger/git-workspace";
import { type Job, Worker } from "bullmq";
import { Redis } from "ioredis";
import {
  type AttemptJobData,
  type AttemptJobProgress,
  type AttemptJobResult,
  cancelChannel,
  defaultQueueName,
} from "../job/attempt-job.js";
import { agentlessResult } from "../job/interrupted-result.js";
import { closeWithin } from "../redis/close-within.js";
import { RedisHealth } from "../redis/redis-health.js";
import { redactRedisUrl, redisOptionsFromUrl } from "../redis/redis-url.js";
import { type LaneJob, startJobLanes } from "./job-lanes.js";
import { pausableLimiter, QueuePause } from "./queue-pause.js";
import { type JobAgentSettings, WarmExecutors } from "./warm-executors.js";
import { WorkerClones } from "./worker-clone.js";

export interface AttemptWorkerOptions {
  /** `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. */
  redis: string;
  /**
   * Runs every attempt (the host's, never closed by the worker); the job's agent model overrides
   * its own. Give this or `executorFor`.
   */
  executor?: Executor;
  /**
   * Makes the executor for a job's agent settings instead: the worker keeps it between jobs, so
   * its agents stay warm (opencode servers already up in the kept worktrees), shared by every job
   * with the same settings; past `keptExecutors` the least recently used idle one is closed, and
   * all are closed with the worker.
   */
  executorFor?: (settings: JobAgentSettings) => Executor;
  /** Executors `executorFor` made that are kept between jobs; default 3. */
  keptExecutors?: number;
  /** Attempts at once in this process; default 1. */
  concurrency?: number;
  /** Default `taskledger-attempts`. */
  queueName?: string;
  /**
   * How long a job's lock lasts without renewal; a worker that dies is noticed within about this
   * (by another worker's stalled check) and its attempt fails as interrupted. Default 30 s.
   */
  lockDurationMs?: number;
  /**
   * Where clones and worktrees go; default a new temporary directory, removed on close (and by the
   * next worker when this one was killed).
   */
  workDir?: string;
  /** How long Redis may stay unreachable at the start; default 30 s. */
  unreachableAfterMs?: number;
  /** Told when a job starts and ends, for the worker's log. */
  onJob?: (event: AttemptJobEvent) => void;
  /** The OS sandbox each attempt and its setup run inside (the worker's own, not the run's). */
  sandbox?: Sandbox;
}

/** A job started or finished on this worker. */
export interface AttemptJobEvent {
  type: "started" | "finished";
  jobId: string;
  /** How the attempt ended (`finished`). */
  outcome?: AttemptResult["outcome"];
  /** What the provider said, when the attempt ended `rate-limited`. */
  limit?: ProviderLimit;
  /** How long no worker of the queue takes a job, when this attempt's limit paused the queue. */
  pausedForMs?: number;
}

// How long closing waits for Redis to answer before dropping the connections.
const closeBoundMs = 3000;

/** A worker's own directory is `<tmp>/taskledger-worker-<pid>-…`, so a later one can sweep it. */
export const workerDirPrefix = "taskledger-worker-";

export interface AttemptWorker {
  /** Stops taking jobs, cancels the running ones (their processes killed) and disconnects. */
  close(): Promise<void>;
}

/** Takes attempt jobs from Redis and runs each in a worktree of a local clone of its remote. */
export async function startAttemptWorker(
  options: AttemptWorkerOptions,
  abortSignal?: AbortSignal,
): Promise<AttemptWorker> {
  if ((options.executor === undefined) === (options.executorFor === undefined))
    throw new InvalidConfigError("startAttemptWorker needs either `executor` or `executorFor`");
  const queueName = options.queueName ?? defaultQueueName;
  const lockDuration = options.lockDurationMs ?? 30_000;
  const connection = {
    ...redisOptionsFromUrl(options.redis),
    maxRetriesPerRequest: null,
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
  };
  const subscriber = new Redis({ ...connection, lazyConnect: true });
  const health = new RedisHealth(
    subscriber,
    options.unreachableAfterMs ?? 30_000,
    redactRedisUrl(options.redis),
  );
  subscriber.connect().catch(() => {});
  try {
    await health.ping(abortSignal);
  } catch (error) {
    health.close();
    subscriber.disconnect();
    throw error;
  }
  const ownDir = options.workDir === undefined;
  // Directories of workers killed before they could remove theirs (`kill -9`) go first.
  if (ownDir) await sweepDeadProcessDirs(tmpdir(), workerDirPrefix);
  const workDir = options.workDir ?? (await createProcessDir(tmpdir(), workerDirPrefix));
  const clones = new WorkerClones(workDir);
  const given = options.executor;
  const warm = options.executorFor
    ? new WarmExecutors(options.executorFor, options.keptExecutors)
    : undefined;
  const leaseFor = (data: AttemptJobData) =>
    warm?.acquire(data.agentModel ? { agentModel: data.agentModel } : {}) ?? {
      executor: given as Executor,
      release: () => {},
    };
  const identity = { host: hostname(), pid: process.pid };

  /**
   * One job until its worktree is free for the next (the agent ended, its work committed and the
   * worktree back at its start); `result` settles once the commit is pushed.
   */
  const runJob = async (
    job: Job<AttemptJobData, AttemptJobResult>,
    cancelled: AbortSignal,
  ): Promise<LaneJob<AttemptJobResult>> => {
    const jobId = job.id!;
    const data = job.data;
    const waitedMs = Math.max(0, Date.now() - job.timestamp);
    options.onJob?.({ type: "started", jobId });
    const slot = await clones.checkout(data, jobId, cancelled);
    let keep = false;
    // Held for the job's whole run, so a job of other settings does not close it under this one.
    let lease: ReturnType<typeof leaseFor> | undefined;
    try {
      lease = leaseFor(data);
      // A kept worktree whose setup ran for the same lockfiles needs no setup again.
      if (data.setup && !(await clones.setUp(slot, data, cancelled))) {
        const started = performance.now();
        const setup = { ...data.setup, inputs: [] };
        const failed = await runSetupCommand(
          setup,
          slot.cwd,
          data.runId,
          cancelled,
          options.sandbox,
        ).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (failed) {
          if (cancelled.aborted) throw failed;
          const result = setupFailedResult(failed, performance.now() - started);
          options.onJob?.({ type: "finished", jobId, outcome: result.outcome });
          return { result: Promise.resolve({ result, worker: { ...identity, jobId } }) };
        }
        await clones.markSetUp(slot, data, cancelled);
      }
      const result: AttemptResult = await lease.executor.run(data.prompt, {
        subTask: data.subTask,
        runId: data.runId,
        attempt: data.attempt,
        cwd: slot.cwd,
        ...(data.agentModel ? { agentModel: data.agentModel } : {}),
        ...(data.readOnly ? { readOnly: true } : {}),
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
        abortSignal: cancelled,
        onEvent: (event) => {
          const progress: AttemptJobProgress = { event };
          job.updateProgress(progress as unknown as object).catch(() => {});
        },
      });
      // Before the lane asks for its next job: a provider's limit pauses every worker's.
      const pausedForMs = await pause.after(result);
      // Committed and the worktree reset: the lane takes its next job while the commit is pushed.
      const committed = clones.commitAndPush(
        slot,
        data,
        `${data.subTask.id}, attempt ${data.attempt}: ${data.subTask.title}`,
      );
      await committed.catch(() => {});
      keep = !cancelled.aborted;
      const output = committed
        .then((made) => made.pushed.then((sent) => ({ commit: made.commit, ...sent })))
        .then(
          (sent): { commit: string; pack?: string } | { note: string } => sent,
          (failure: unknown) => ({
            note: `Its changes could not be pushed: ${describeError(failure)}`,
          }),
        )
        .then((pushed): AttemptJobResult => {
          options.onJob?.({
            type: "finished",
            jobId,
            outcome: result.outcome,
            ...(result.limit ? { limit: result.limit } : {}),
            ...(pausedForMs === undefined ? {} : { pausedForMs }),
          });
          const { error } = result;
          return {
            result:
              "note" in pushed
                ? { ...result, error: error ? `${error}. ${pushed.note}` : pushed.note }
                : result,
            ...("commit" in pushed ? { commit: pushed.commit } : {}),
            ...("pack" in pushed && pushed.pack ? { pack: pushed.pack } : {}),
            worker: { ...identity, jobId },
            waitedMs,
          };
        });
      return { result: output };
    } finally {
      lease?.release();
      // Kept for the next job when the attempt ended on its own; a cancelled one's may hold processes.
      await (keep ? clones.release(slot) : clones.remove(slot)).catch(() => {});
    }
  };

  // Made without a processor: the lanes below take its jobs (BullMQ's manual processing).
  const worker = new Worker<AttemptJobData, AttemptJobResult>(queueName, undefined, {
    connection,
    autorun: false,
    lockDuration,
    stalledInterval: lockDuration,
    // A job whose worker died is not run again under the same attempt number: it fails, the
    // coordinator counts the attempt as interrupted and sends the next attempt as a new job.
    maxStalledCount: 0,
    // Lets the queue's rate limit, set by any worker on a provider's limit, hold this one too.
    limiter: pausableLimiter,
  });
  worker.on("error", () => {});
  const pause = new QueuePause(worker);
  await worker.waitUntilReady();
  void worker.startStalledCheckTimer().catch(() => {});
  const lanes = startJobLanes(worker, {
    lanes: options.concurrency ?? 1,
    lockDurationMs: lockDuration,
    run: runJob,
    limitedForMs: () => worker.backend.getRateLimitTtl(pausableLimiter.max),
  });
  await subscriber.subscribe(cancelChannel(queueName));
  subscriber.on("message", (_channel: string, jobId: string) => lanes.cancel(jobId));

  // Git's helper process stays up while the worker does: each job's git calls find it running.
  const releaseGit = holdGitRunner();
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        // Running attempts end (their processes killed) and their results reach Redis before the
        // connections go.
        await lanes.stop(30_000);
        // Forced: nothing is left to wait for, and a lane's blocking wait for a job would hold a
        // graceful close until it times out.
        await closeWithin([{ close: () => worker.close(true) }], [], closeBoundMs);
        void worker.disconnect().catch(() => {});
        health.close();
        subscriber.disconnect();
        await warm?.close();
        await clones.close().catch(() => {});
        if (ownDir) await rm(workDir, { recursive: true, force: true });
        releaseGit();
      })();
      return closing;
    },
  };
}

/** An attempt that never started: its worktree's setup command failed on this worker. */
function setupFailedResult(error: unknown, durationMs: number): AttemptResult {
  return agentlessResult(`On the worker: ${describeError(error)}`, durationMs);
}
