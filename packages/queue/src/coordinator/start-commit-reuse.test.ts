import { readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Executor } from "@taskledger/core";
import { gitIn, redisTestsEnabled } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import {
  attemptResult,
  redisForTests,
  repositoryWithRemote,
  subTask,
} from "../test-support/queue-fixtures.js";
import { startAttemptWorker } from "../worker/attempt-worker.js";
import { createQueueExecutor } from "./queue-executor.js";

const enabled = redisTestsEnabled();

/** Writes `<id>.txt` where it runs. */
const writing: Executor = {
  async run(_prompt, options) {
    await writeFile(join(options.cwd, `${options.subTask.id}.txt`), "done\n");
    return attemptResult();
  },
};

const refsIn = (repo: string) =>
  gitIn(repo, "for-each-ref", "--format=%(refname)", "refs/taskledger/").split("\n").sort();

describe.runIf(enabled)("attempts that start from the same commit (real Redis, real git)", () => {
  const redis = redisForTests();

  it("push it once and are fetched once into the worker's clone; each brings back its own work", async () => {
    const { root, remote, worktree } = repositoryWithRemote("taskledger-queue-reuse-");
    const workDir = join(root, "worker");
    const worker = await startAttemptWorker({
      redis: redis().url,
      executor: writing,
      queueName: "q-reuse",
      workDir,
    });
    const send = async (queue: ReturnType<typeof createQueueExecutor>, id: string) => {
      const cwd = worktree(id);
      const ended = await queue.run("prompt", {
        runId: "run-reuse",
        subTask: subTask(id),
        attempt: 1,
        cwd,
        abortSignal: new AbortController().signal,
      });
      expect(ended.outcome).toBe("finished");
      expect(readFileSync(join(cwd, `${id}.txt`), "utf8")).toBe("done\n");
    };
    const queue = createQueueExecutor({ redis: redis().url, remote, queueName: "q-reuse" });
    // A second coordinator (a resumed one, say) pushes the same commit under its own ref.
    const other = createQueueExecutor({ redis: redis().url, remote, queueName: "q-reuse" });
    try {
      await Promise.all([send(queue, "a"), send(queue, "b")]);
      await send(other, "c");
    } finally {
      await queue.close();
      await other.close();
      await worker.close();
    }
    const root_ = "refs/taskledger/run-reuse/queue";
    const pushedStart = refsIn(remote).filter((ref) => ref.endsWith("/start"));
    expect(pushedStart).toHaveLength(2);
    expect(pushedStart).toContain(`${root_}/c/1/start`);
    // The worker fetched the commit for the first job only: the later start ref never reached it.
    const [clone] = readdirSync(workDir).filter((name) => name.endsWith(".git"));
    const fetched = refsIn(join(workDir, clone!));
    expect(fetched).toHaveLength(1);
    expect(pushedStart).toContain(fetched[0]);
    expect(fetched[0]).not.toBe(`${root_}/c/1/start`);
  });

  it("a kept worktree taken by a job from another commit holds that commit's files and nothing of the last job's", async () => {
    const { repo, remote, worktree } = repositoryWithRemote("taskledger-queue-reuse-", {
      "base.txt": "base\n",
      ".gitignore": "build/\n",
    });
    const listings: string[] = [];
    const listing: Executor = {
      async run(prompt, options) {
        listings.push(readdirSync(options.cwd).sort().join(","));
        await writeFile(join(options.cwd, `${options.subTask.id}.txt`), "done\n");
        await writeFile(join(options.cwd, "base.txt"), "changed\n");
        await mkdir(join(options.cwd, "build"), { recursive: true });
        await writeFile(join(options.cwd, "build", "out"), "ignored\n");
        return writing.run(prompt, options);
      },
    };
    const worker = await startAttemptWorker({
      redis: redis().url,
      executor: listing,
      queueName: "q-moved",
    });
    const queue = createQueueExecutor({ redis: redis().url, remote, queueName: "q-moved" });
    try {
      for (const id of ["a", "b"]) {
        const cwd = worktree(id);
        const ended = await queue.run("prompt", {
          runId: "run-moved",
          subTask: subTask(id),
          attempt: 1,
          cwd,
          abortSignal: new AbortController().signal,
        });
        expect(ended.outcome).toBe("finished");
        expect(readFileSync(join(cwd, "base.txt"), "utf8")).toBe("changed\n");
        // The next job starts from a later commit.
        await writeFile(join(repo, `after-${id}.txt`), "later\n");
        gitIn(repo, "add", "-A");
        gitIn(repo, "-c", "user.name=T", "-c", "user.email=t@example.test", "commit", "-qm", id);
      }
    } finally {
      await queue.close();
      await worker.close();
    }
    expect(listings).toEqual([".git,.gitignore,base.txt", ".git,.gitignore,after-a.txt,base.txt"]);
  });
});
