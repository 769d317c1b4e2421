import { spawnSync } from "node:child_process";
import { getEventListeners } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  AbortedError,
  type AgentEvent,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  QueueError,
} from "@taskledger/core";
import { gitIn, redisTestsEnabled } from "@taskledger/testing";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import {
  attemptResult,
  subTask as fixtureSubTask,
  redisForTests,
  repositoryWithRemote,
} from "../test-support/queue-fixtures.js";
import { type AttemptWorker, startAttemptWorker } from "../worker/attempt-worker.js";
import { createQueueExecutor, type QueueExecutor } from "./queue-executor.js";

const enabled = redisTestsEnabled();

const git = gitIn;

const subTask = (id: string) => fixtureSubTask(id, `Write ${id}.txt`);

/** A repository, a bare remote, and detached worktrees at its commit (what core gives an attempt). */
function repository() {
  return repositoryWithRemote("taskledger-queue-", {
    "base.txt": "base\n",
    ".gitignore": "build/\n",
  });
}

/** Writes `<id>.txt` in its directory, tells one event, and holds when told to until aborted. */
function writingExecutor(hold = false) {
  const calls: ExecuteOptions[] = [];
  const executor: Executor = {
    async run(_prompt, options): Promise<AttemptResult> {
      calls.push(options);
      options.onEvent?.({ type: "text", text: `working on ${options.subTask.id}` });
      if (hold) {
        await new Promise((resolve) =>
          options.abortSignal.addEventListener("abort", resolve, { once: true }),
        );
        return { ...attemptResult("cancelled"), error: "aborted" };
      }
      await writeFile(join(options.cwd, `${options.subTask.id}.txt`), `${options.attempt}\n`);
      return attemptResult("finished");
    },
  };
  return { executor, calls };
}

describe.runIf(enabled)("the queue executor (real Redis, in-process worker)", () => {
  const redis = redisForTests();
  let worker: AttemptWorker | undefined;
  let executor: QueueExecutor | undefined;
  afterEach(async () => {
    await executor?.close();
    await worker?.close();
    executor = undefined;
    worker = undefined;
  });
  /** A worker running `agent` and a coordinator sending to it through `queueName`. */
  const workerAndCoordinator = async (agent: Executor, remote: string, queueName: string) => {
    worker = await startAttemptWorker({ redis: redis().url, executor: agent, queueName });
    executor = createQueueExecutor({ redis: redis().url, remote, queueName });
  };

  it("runs an attempt on a worker, streams its events and brings its work into the attempt's directory", async () => {
    const { remote, worktree } = repository();
    const cwd = worktree("attempt");
    const fake = writingExecutor();
    await workerAndCoordinator(fake.executor, remote, "q1");
    const events: AgentEvent[] = [];
    const run = (attempt: number) =>
      executor!.run("prompt", {
        runId: "run-1",
        subTask: subTask("a.1"),
        attempt,
        cwd,
        abortSignal: new AbortController().signal,
        onEvent: (event) => events.push(event),
      });
    const first = await run(1);
    expect(first.outcome).toBe("finished");
    expect(first.details?.worker).toMatchObject({ pid: process.pid, jobId: "run-1.a%2E1.1" });
    expect(readFileSync(join(cwd, "a.1.txt"), "utf8")).toBe("1\n");
    expect(git(cwd, "status", "--porcelain")).toBe("");
    expect(events).toContainEqual({ type: "text", text: "working on a.1" });
    expect(fake.calls[0]?.cwd).not.toBe(cwd);
    // The same attempt sent again (a resumed coordinator) is the same job: it does not run again.
    git(cwd, "checkout", "-q", "-f", "--detach", "main");
    const again = await run(1);
    expect(again.details?.worker).toEqual(first.details?.worker);
    expect(fake.calls).toHaveLength(1);
    expect(readFileSync(join(cwd, "a.1.txt"), "utf8")).toBe("1\n");
  });

  it("a signal aborted after its attempt ended cancels nothing: the job stays for a resumed coordinator", async () => {
    const { remote, worktree } = repository();
    const cwd = worktree("attempt");
    const fake = writingExecutor();
    await workerAndCoordinator(fake.executor, remote, "q-after");
    const controller = new AbortController();
    const run = (abortSignal: AbortSignal) =>
      executor!.run("prompt", {
        runId: "run-after",
        subTask: subTask("c"),
        attempt: 1,
        cwd,
        abortSignal,
      });
    const first = await run(controller.signal);
    expect(first.outcome).toBe("finished");
    // Nothing of the attempt listens to its signal once it is over.
    expect(getEventListeners(controller.signal, "abort")).toEqual([]);
    // The run's end aborts it (a resumed CLI's did): the finished job was cancelled, removed, and
    // its coordinator's process held for the cancel's 20 s grace.
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 300));
    git(cwd, "checkout", "-q", "-f", "--detach", "main");
    const again = await run(new AbortController().signal);
    expect(again.details?.worker).toEqual(first.details?.worker);
    expect(fake.calls).toHaveLength(1);
  });

  it("cancelling reaches the worker: the attempt's signal there is aborted and the run stops", async () => {
    const { remote, worktree } = repository();
    const fake = writingExecutor(true);
    await workerAndCoordinator(fake.executor, remote, "q2");
    const controller = new AbortController();
    const running = executor!.run("prompt", {
      runId: "run-2",
      subTask: subTask("b"),
      attempt: 1,
      cwd: worktree("attempt"),
      abortSignal: controller.signal,
      onEvent: (event) => {
        if (event.type === "text") controller.abort();
      },
    });
    const ended = await running.catch((error: unknown) => error);
    expect(fake.calls[0]?.abortSignal.aborted).toBe(true);
    if (!AbortedError.isInstance(ended)) expect((ended as AttemptResult).outcome).toBe("cancelled");
  });

  it("runs the run's setup command in the worker's worktree before the agent; a failing one is the attempt's error", async () => {
    const { remote, worktree } = repository();
    const seen: string[] = [];
    const fake: Executor = {
      async run(_prompt, options) {
        seen.push(readFileSync(join(options.cwd, "made-by-setup.txt"), "utf8"));
        return attemptResult("finished");
      },
    };
    worker = await startAttemptWorker({ redis: redis().url, executor: fake, queueName: "q-setup" });
    const send = async (command: string, attempt: number) => {
      executor = createQueueExecutor({
        redis: redis().url,
        remote,
        queueName: "q-setup",
        setup: { command },
      });
      const ended = await executor.run("prompt", {
        runId: "run-setup",
        subTask: subTask("s"),
        attempt,
        cwd: worktree(`attempt-${attempt}`),
        abortSignal: new AbortController().signal,
      });
      await executor.close();
      executor = undefined;
      return ended;
    };
    expect((await send("echo ready > made-by-setup.txt", 1)).outcome).toBe("finished");
    expect(seen).toEqual(["ready\n"]);
    const failed = await send("echo 'no lockfile' >&2; exit 9", 2);
    expect(failed.outcome).toBe("error");
    expect(failed.error).toMatch(
      /On the worker: The setup command .* failed \(exit 9\)[\s\S]*no lockfile/,
    );
    expect(seen).toHaveLength(1);
  });

  it("a worker keeps its worktree for the next job: nothing of the earlier job's files, the setup not run again", async () => {
    const { remote, worktree } = repository();
    const count = join(dirname(remote), "setups");
    const listings: string[] = [];
    const fake: Executor = {
      async run(_prompt, options) {
        listings.push(readdirSync(options.cwd).sort().join(","));
        await writeFile(join(options.cwd, `${options.subTask.id}.txt`), "work\n");
        await writeFile(join(options.cwd, "build", `${options.subTask.id}.log`), "ignored\n");
        return attemptResult("finished");
      },
    };
    worker = await startAttemptWorker({ redis: redis().url, executor: fake, queueName: "q-keep" });
    executor = createQueueExecutor({
      redis: redis().url,
      remote,
      queueName: "q-keep",
      setup: { command: `echo run >> ${count}; mkdir -p build; echo made > build/out` },
    });
    for (const id of ["one", "two"]) {
      const ended = await executor.run("prompt", {
        runId: "run-keep",
        subTask: subTask(id),
        attempt: 1,
        cwd: worktree(`keep-${id}`),
        abortSignal: new AbortController().signal,
      });
      expect(ended.outcome).toBe("finished");
    }
    expect(readFileSync(count, "utf8")).toBe("run\n");
    expect(listings).toEqual([".git,.gitignore,base.txt,build", ".git,.gitignore,base.txt,build"]);
  });

  it("an attempt with no worker running says it waits for one, and fails after workerWaitMs saying no worker took it", async () => {
    const { remote, worktree } = repository();
    executor = createQueueExecutor({
      redis: redis().url,
      remote,
      queueName: "q4",
      workerWaitMs: 300,
    });
    const events: AgentEvent[] = [];
    const ended = await executor.run("prompt", {
      runId: "run-4",
      subTask: subTask("d"),
      attempt: 1,
      cwd: worktree("attempt"),
      abortSignal: new AbortController().signal,
      onEvent: (event) => events.push(event),
    });
    expect(events).toEqual([{ type: "executor-status", status: "waiting-for-worker" }]);
    expect(ended).toMatchObject({ outcome: "error", retryable: false, infrastructureError: true });
    expect(ended.error).toMatch(/No worker took the attempt .* within 0 s: no worker is running/);
  });

  it("the wait for a worker stays bounded when Redis refuses its lookup for a while", async () => {
    const { remote, worktree } = repository();
    executor = createQueueExecutor({
      redis: redis().url,
      remote,
      queueName: "q4r",
      workerWaitMs: 300,
    });
    // The wait's lookup of the job's state is a script: scripts are refused to the queue's user
    // from the moment the attempt waits until 1.5 s later, past the first end of its wait.
    const admin = new Redis(redis().url, { lazyConnect: true });
    await admin.connect();
    let restored: Promise<unknown> | undefined;
    try {
      const ended = await executor.run("prompt", {
        runId: "run-4r",
        subTask: subTask("r"),
        attempt: 1,
        cwd: worktree("attempt"),
        abortSignal: AbortSignal.timeout(20_000),
        onEvent: (event) => {
          if (event.type !== "executor-status" || event.status !== "waiting-for-worker") return;
          void admin.call("ACL", "SETUSER", "default", "-evalsha", "-eval");
          restored = new Promise((done) => setTimeout(done, 1500)).then(() =>
            admin.call("ACL", "SETUSER", "default", "+evalsha", "+eval"),
          );
        },
      });
      expect(restored).toBeDefined();
      // Before, the failed lookup ended the bound: the attempt waited until its signal (20 s).
      expect(ended).toMatchObject({ outcome: "error", infrastructureError: true });
      expect(ended.error).toMatch(/No worker took the attempt .*: no worker is running/);
    } finally {
      await restored;
      await admin.call("ACL", "SETUSER", "default", "+evalsha", "+eval");
      admin.disconnect();
    }
  });

  it("an attempt waits past workerWaitMs while its worker is busy, and is taken once it is free", async () => {
    const { remote, worktree } = repository();
    const holding = writingExecutor(true);
    const writing = writingExecutor();
    const fake: Executor = {
      run: (prompt, options) =>
        (options.subTask.id === "busy" ? holding : writing).executor.run(prompt, options),
    };
    worker = await startAttemptWorker({ redis: redis().url, executor: fake, queueName: "q5" });
    executor = createQueueExecutor({
      redis: redis().url,
      remote,
      queueName: "q5",
      workerWaitMs: 200,
    });
    const busy = new AbortController();
    const attempt = (id: string, signal: AbortSignal, onEvent: (event: AgentEvent) => void) =>
      executor!.run("prompt", {
        runId: "run-5",
        subTask: subTask(id),
        attempt: 1,
        cwd: worktree(id),
        abortSignal: signal,
        onEvent,
      });
    let took: () => void = () => {};
    const taken = new Promise<void>((done) => {
      took = done;
    });
    const first = attempt("busy", busy.signal, (event) => {
      if (event.type === "text") took();
    });
    await taken;
    const events: AgentEvent[] = [];
    const second = attempt("e", new AbortController().signal, (event) => events.push(event));
    await new Promise((resolve) => setTimeout(resolve, 600));
    busy.abort();
    await first.catch(() => {});
    const ended = await second;
    expect(ended.outcome).toBe("finished");
    expect(events.slice(0, 2)).toEqual([
      { type: "executor-status", status: "waiting-for-worker" },
      { type: "executor-status", status: "running" },
    ]);
    expect(ended.details?.waitedForWorkerMs).toBeGreaterThanOrEqual(600);
  });

  it("a worker removes the directories of workers killed before they could, and keeps live ones'", async () => {
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const leftover = join(tmpdir(), `taskledger-worker-${dead}-abc123`);
    const live = join(tmpdir(), `taskledger-worker-${process.ppid}-def456`);
    for (const dir of [leftover, live])
      mkdirSync(join(dir, "0123456789abcdef.git"), { recursive: true });
    worker = await startAttemptWorker({
      redis: redis().url,
      executor: writingExecutor().executor,
      queueName: "q6",
    });
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(
      readdirSync(tmpdir()).filter((name) => name.startsWith(`taskledger-worker-${process.pid}-`)),
    ).toHaveLength(1);
    await worker.close();
    worker = undefined;
    expect(
      readdirSync(tmpdir()).filter((name) => name.startsWith(`taskledger-worker-${process.pid}-`)),
    ).toHaveLength(0);
    rmSync(live, { recursive: true });
  });

  // Last: it restarts the shared server.
  it("a Redis restart that loses a running job ends its attempt as interrupted, not a hang", async () => {
    const { remote, worktree } = repository();
    const fake = writingExecutor(true);
    await workerAndCoordinator(fake.executor, remote, "q3");
    let started: () => void = () => {};
    const running = executor!.run("prompt", {
      runId: "run-3",
      subTask: subTask("c"),
      attempt: 1,
      cwd: worktree("attempt"),
      abortSignal: new AbortController().signal,
      onEvent: () => started(),
    });
    await new Promise<void>((done) => {
      started = done;
    });
    await redis().restart();
    const ended = await running;
    expect(ended).toMatchObject({
      outcome: "error",
      infrastructureError: true,
      details: { interrupted: true },
    });
    expect(ended.error).toContain("Redis restarted and lost the job");
  });
});

describe("the queue executor without Redis", () => {
  it("fails with a QueueError after its bound when Redis does not answer", async () => {
    executor = createQueueExecutor({
      redis: "redis://127.0.0.1:1",
      remote: "/nonexistent",
      unreachableAfterMs: 500,
    });
    const error = await executor.ready().catch((e: unknown) => e);
    expect(QueueError.isInstance(error) && error.reason).toBe("redis-unreachable");
    await executor.close();
  });
  let executor: QueueExecutor;
});
