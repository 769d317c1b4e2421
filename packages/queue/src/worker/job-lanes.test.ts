import { randomBytes } from "node:crypto";
import { chmodSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Executor } from "@taskledger/core";
import { gitIn, redisTestsEnabled } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createQueueExecutor, maxInlineWorkBytes } from "../coordinator/queue-executor.js";
import {
  attemptResult,
  redisForTests,
  repositoryWithRemote,
  subTask,
} from "../test-support/queue-fixtures.js";
import { startAttemptWorker } from "./attempt-worker.js";

const enabled = redisTestsEnabled();

/**
 * Writes `<id>.txt` and notes when each attempt's agent started. `bytes` of random text make the
 * work too large to travel with the result: it is pushed to the remote.
 */
function notingExecutor(started: Map<string, number>, bytes = 0): Executor {
  return {
    async run(_prompt, options) {
      started.set(options.subTask.id, performance.now());
      const filler = randomBytes(bytes).toString("base64");
      await writeFile(join(options.cwd, `${options.subTask.id}.txt`), `done\n${filler}`);
      return attemptResult();
    },
  };
}

/** The attempts' work refs the remote holds. */
const workRefs = (remote: string) =>
  gitIn(remote, "for-each-ref", "--format=%(refname)", "refs/taskledger/")
    .split("\n")
    .filter((ref) => ref.endsWith("/work"));

/**
 * A repository and a bare remote that holds every push of an attempt's work until `release()`
 * (its pre-receive hook waits for a file); the starts' pushes go through.
 */
function heldRemote() {
  const { root, repo, remote } = repositoryWithRemote("taskledger-queue-lanes-");
  const gate = join(root, "released");
  const hook = join(remote, "hooks", "pre-receive");
  writeFileSync(
    hook,
    `#!/bin/sh\ncase "$(cat)" in *"/work"*) while [ ! -e '${gate}' ]; do sleep 0.05; done;; esac\n`,
  );
  chmodSync(hook, 0o755);
  const worktree = (name: string) => {
    const path = join(root, name);
    gitIn(repo, "worktree", "add", "-q", "--detach", path, "main");
    return path;
  };
  return { remote, worktree, release: () => writeFileSync(gate, "") };
}

const until = async (done: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; !done() && Date.now() < end; )
    await new Promise((r) => setTimeout(r, 10));
};

describe.runIf(enabled)("a worker's lanes (real Redis, real git)", () => {
  const redis = redisForTests();

  it("take the next job while the last one's work is still being pushed; every result arrives with its commit", async () => {
    const { remote, worktree, release } = heldRemote();
    const started = new Map<string, number>();
    const worker = await startAttemptWorker({
      redis: redis().url,
      executor: notingExecutor(started, 2 * maxInlineWorkBytes),
      queueName: "lanes",
    });
    const executor = createQueueExecutor({ redis: redis().url, remote, queueName: "lanes" });
    try {
      const attempt = (id: string) => {
        const cwd = worktree(id);
        return executor
          .run(`Write ${id}.txt`, {
            subTask: subTask(id),
            runId: "lanes",
            attempt: 1,
            cwd,
            abortSignal: new AbortController().signal,
          })
          .then((result) => ({ result, cwd }));
      };
      const both = Promise.all([attempt("one"), attempt("two")]);
      // One worker, one job at a time, and no result can come back yet: the second agent starts
      // only if the worker took its job while the first one's work waited to be pushed.
      await until(() => started.size === 2, 15_000);
      const startedWhileHeld = started.size;
      release();
      const results = await both;
      expect(startedWhileHeld).toBe(2);
      for (const [{ result, cwd }, id] of results.map((r, i) => [r, ["one", "two"][i]] as const)) {
        expect(result.outcome).toBe("finished");
        expect(result.error).toBeUndefined();
        // The worker's commit is checked out in the attempt's directory: its own file, no other.
        expect(gitIn(cwd, "show", "--name-only", "--format=", "HEAD")).toBe(`${id}.txt`);
      }
      // Too large to travel with the result: both came through the remote.
      expect(workRefs(remote)).toHaveLength(2);
    } finally {
      release();
      await executor.close();
      await worker.close();
    }
  }, 40_000);

  it("a small attempt's commit travels with its result, nothing pushed; a large one through the remote", async () => {
    const { remote, worktree, release } = heldRemote();
    // Nothing holds this one: a small result never reaches the remote's hook.
    release();
    const sizes = new Map([
      ["small", 0],
      ["large", 2 * maxInlineWorkBytes],
    ]);
    const worker = await startAttemptWorker({
      redis: redis().url,
      executor: {
        run: (prompt, options) =>
          notingExecutor(new Map(), sizes.get(options.subTask.id)).run(prompt, options),
      },
      queueName: "lanes-inline",
    });
    const executor = createQueueExecutor({ redis: redis().url, remote, queueName: "lanes-inline" });
    try {
      for (const id of ["small", "large"]) {
        const cwd = worktree(id);
        const result = await executor.run(`Write ${id}.txt`, {
          subTask: subTask(id),
          runId: "lanes-inline",
          attempt: 1,
          cwd,
          abortSignal: new AbortController().signal,
        });
        expect(result.error).toBeUndefined();
        expect(gitIn(cwd, "show", "--name-only", "--format=", "HEAD")).toBe(`${id}.txt`);
        expect(gitIn(cwd, "status", "--porcelain")).toBe("");
        // Only the large one's work is on the remote.
        expect(workRefs(remote).map((ref) => ref.includes("/large/"))).toEqual(
          id === "small" ? [] : [true],
        );
      }
    } finally {
      await executor.close();
      await worker.close();
    }
  }, 40_000);

  it("closing waits for a result still being pushed, so it reaches the coordinator", async () => {
    const { remote, worktree, release } = heldRemote();
    const started = new Map<string, number>();
    const worker = await startAttemptWorker({
      redis: redis().url,
      executor: notingExecutor(started, 2 * maxInlineWorkBytes),
      queueName: "lanes-close",
    });
    const executor = createQueueExecutor({ redis: redis().url, remote, queueName: "lanes-close" });
    try {
      const cwd = worktree("one");
      const running = executor.run("Write one.txt", {
        subTask: subTask("one"),
        runId: "lanes-close",
        attempt: 1,
        cwd,
        abortSignal: new AbortController().signal,
      });
      await until(() => started.has("one"), 15_000);
      let closed = false;
      const closing = worker.close().then(() => {
        closed = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      const closedWhileHeld = closed;
      release();
      await closing;
      const result = await running;
      expect(closedWhileHeld).toBe(false);
      expect(result.outcome).toBe("finished");
      expect(result.error).toBeUndefined();
      expect(gitIn(cwd, "show", "--name-only", "--format=", "HEAD")).toBe("one.txt");
    } finally {
      release();
      await executor.close();
      await worker.close();
    }
  }, 40_000);
});
