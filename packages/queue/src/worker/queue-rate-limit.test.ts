import type { AttemptResult, Executor, ProviderLimit } from "@taskledger/core";
import { redisTestsEnabled } from "@taskledger/testing";
import { Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { createQueueExecutor, type QueueExecutor } from "../coordinator/queue-executor.js";
import {
  attemptResult,
  redisForTests,
  repositoryWithRemote,
  subTask,
} from "../test-support/queue-fixtures.js";
import { type AttemptJobEvent, type AttemptWorker, startAttemptWorker } from "./attempt-worker.js";
import { startJobLanes } from "./job-lanes.js";
import { pausableLimiter } from "./queue-pause.js";

const enabled = redisTestsEnabled();

const openaiLimit: ProviderLimit = {
  kind: "rate-limit",
  provider: "openai",
  retryAfterMs: 2000,
  statusCode: 429,
  message: "Rate limit reached for gpt-5 in organization org-x on requests per min",
};

const limited = (limit: ProviderLimit): AttemptResult => ({
  ...attemptResult("rate-limited"),
  error: limit.message,
  limit,
});

/** An executor that records when each sub-task started, ending each as `ends` says. */
function recordingExecutor(ends: (id: string) => Promise<AttemptResult> | AttemptResult) {
  const started = new Map<string, number>();
  const executor: Executor = {
    async run(_prompt, options) {
      started.set(options.subTask.id, Date.now());
      return ends(options.subTask.id);
    },
  };
  return { executor, started };
}

describe.runIf(enabled)("a provider's limit pauses the queue (real Redis)", () => {
  const redis = redisForTests();
  const closing: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const one of closing.splice(0).reverse()) await one.close();
  });
  const connect = (queueName: string) => {
    const queue = new Queue(queueName, { connection: { host: "127.0.0.1", port: redis().port } });
    closing.push(queue);
    const coordinator: QueueExecutor = createQueueExecutor({
      redis: redis().url,
      remote: repo.remote,
      queueName,
    });
    closing.push(coordinator);
    return { queue, coordinator };
  };
  const repo = { remote: "", cwd: "" };
  const setUp = (prefix: string) => {
    const made = repositoryWithRemote(prefix);
    repo.remote = made.remote;
    repo.cwd = made.worktree("attempt");
  };
  const attempt = (coordinator: QueueExecutor, id: string) =>
    coordinator.run("prompt", {
      runId: "run-rl",
      subTask: subTask(id),
      attempt: 1,
      cwd: repo.cwd,
      abortSignal: new AbortController().signal,
    });
  const worker = async (queueName: string, executor: Executor, events?: AttemptJobEvent[]) => {
    const started: AttemptWorker = await startAttemptWorker({
      redis: redis().url,
      executor,
      queueName,
      ...(events ? { onJob: (event) => events.push(event) } : {}),
    });
    closing.push(started);
    return started;
  };

  it("holds back the other worker until the provider's Retry-After; the result reaches the coordinator intact", async () => {
    setUp("taskledger-queue-rl-");
    const { queue, coordinator } = connect("q-rl");
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let limitedAt = 0;
    // Each later job holds its worker a moment, so the two jobs sent next need both workers.
    const busy = async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return attemptResult("finished");
    };
    // Worker A takes the first job alone, then its provider refuses it.
    const a = recordingExecutor(async (id) => {
      if (id !== "first") return busy();
      await gate;
      limitedAt = Date.now();
      return limited(openaiLimit);
    });
    const eventsA: AttemptJobEvent[] = [];
    await worker("q-rl", a.executor, eventsA);
    const first = attempt(coordinator, "first");
    await expect.poll(() => a.started.has("first"), { timeout: 10_000 }).toBe(true);
    // Worker B is up and idle while A's attempt meets the limit.
    const b = recordingExecutor(busy);
    await worker("q-rl", b.executor);
    // B is in BullMQ's blocking wait for a job when the limit comes: only the queue's limit holds it.
    await new Promise((resolve) => setTimeout(resolve, 500));
    release();
    const result = await first;
    expect(result.outcome).toBe("rate-limited");
    expect(result.limit).toEqual(openaiLimit);
    expect(await queue.getRateLimitTtl()).toBeGreaterThan(0);
    expect(eventsA.at(-1)).toMatchObject({
      type: "finished",
      outcome: "rate-limited",
      limit: openaiLimit,
      pausedForMs: 2000,
    });
    // Two jobs sent while the limit holds: neither worker takes one before it expires.
    const sentAt = Date.now();
    expect(sentAt - limitedAt).toBeLessThan(1500);
    const next = await Promise.all([attempt(coordinator, "n1"), attempt(coordinator, "n2")]);
    expect(next.map((ended) => ended.outcome)).toEqual(["finished", "finished"]);
    const starts = ["n1", "n2"].map((id) => a.started.get(id) ?? b.started.get(id) ?? 0);
    for (const start of starts) {
      expect(start - limitedAt).toBeGreaterThanOrEqual(1900);
      expect(start - limitedAt).toBeLessThan(8000);
    }
    // B took one: it was free all along and still waited for A's limit.
    expect(b.started.size).toBeGreaterThanOrEqual(1);
  }, 20_000);

  it("is not paused by a spent quota: waiting does not help", async () => {
    setUp("taskledger-queue-quota-");
    const { queue, coordinator } = connect("q-quota");
    const quota: ProviderLimit = {
      kind: "quota",
      provider: "openai",
      statusCode: 429,
      message: "You exceeded your current quota (insufficient_quota)",
    };
    const ran = recordingExecutor((id) =>
      id === "spent" ? limited(quota) : attemptResult("finished"),
    );
    const events: AttemptJobEvent[] = [];
    await worker("q-quota", ran.executor, events);
    const result = await attempt(coordinator, "spent");
    expect(result.limit).toEqual(quota);
    expect(await queue.getRateLimitTtl(pausableLimiter.max)).toBe(0);
    expect((await attempt(coordinator, "after")).outcome).toBe("finished");
    expect(
      events.find((event) => event.jobId.endsWith(".spent.1") && event.type === "finished"),
    ).not.toHaveProperty("pausedForMs");
  }, 20_000);

  it("a lane waits out the queue's limit without asking in a loop, then takes the job", async () => {
    const queueName = "q-rl-lanes";
    const connection = { host: "127.0.0.1", port: redis().port, maxRetriesPerRequest: null };
    const queue = new Queue(queueName, { connection });
    closing.push(queue);
    const bull = new Worker(queueName, undefined, {
      connection,
      autorun: false,
      limiter: pausableLimiter,
    });
    closing.push({ close: () => bull.close(true) });
    await bull.waitUntilReady();
    let asked = 0;
    const getNextJob = bull.getNextJob.bind(bull);
    bull.getNextJob = (token, options) => {
      asked++;
      return getNextJob(token, options);
    };
    const taken: number[] = [];
    const lanes = startJobLanes(bull, {
      lanes: 2,
      lockDurationMs: 30_000,
      run: async () => {
        taken.push(Date.now());
        return { result: Promise.resolve("done") };
      },
      limitedForMs: () => bull.backend.getRateLimitTtl(pausableLimiter.max),
    });
    closing.push({ close: () => lanes.stop(1000) });
    await bull.rateLimit(1500);
    const limitedAt = Date.now();
    asked = 0;
    await queue.add("attempt", {});
    await expect.poll(() => taken.length, { timeout: 5000 }).toBe(1);
    expect(taken[0]! - limitedAt).toBeGreaterThanOrEqual(1400);
    // Two lanes over 1.5 s: a few asks each, not thousands.
    expect(asked).toBeLessThan(12);
  }, 20_000);
});
