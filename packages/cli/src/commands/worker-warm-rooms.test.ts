import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AttemptResult, SubTask } from "@taskledger/core";
import { createQueueExecutor } from "@taskledger/queue";
import {
  afterToolResult,
  alive,
  createGitRepo,
  createModelServer,
  gitIn,
  type ModelServer,
  type RedisServer,
  redisTestsEnabled,
  startRedisServer,
} from "@taskledger/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { builtCli } from "../test-support/cli-harness.js";
import { serversOf, startWorker, type WorkerProcess } from "../test-support/queue-workers.js";

const enabled = redisTestsEnabled();

const subTask = (id: string): SubTask => ({
  id,
  title: `Write ${id}.txt`,
  description: `Write ${id}.txt`,
  successCriteria: [],
  dependsOn: [],
  checks: [],
});

describe.runIf(enabled && process.platform === "linux")(
  "taskledger worker keeps its agent warm between jobs (real Redis, real opencode, real git)",
  () => {
    let redis: RedisServer;
    let server: ModelServer | undefined;
    const workers: WorkerProcess[] = [];
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });
    afterEach(async () => {
      await Promise.all(workers.splice(0).map((worker) => worker.stop()));
      await server?.close();
      server = undefined;
    });

    it("two jobs in a row on one worker start one opencode server, which serves both and stops with the worker", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const root = mkdtempSync(join(tmpdir(), "taskledger-worker-warm-"));
      const repo = join(root, "repo");
      const remote = join(root, "remote.git");
      createGitRepo(repo, { "README.md": "hello\n" });
      execFileSync("git", ["init", "-q", "--bare", remote]);
      const cwd = join(root, "attempt");
      gitIn(repo, "worktree", "add", "-q", "--detach", cwd, "main");
      let written = 0;
      server = await createModelServer({
        replies: (request) =>
          afterToolResult(request)
            ? { text: "Done." }
            : {
                toolCalls: [
                  {
                    name: "write",
                    arguments: { filePath: `job-${++written}.txt`, content: "x\n" },
                  },
                ],
              },
      });
      const worker = await startWorker(redis.url, server.openaiBaseURL, join(root, "w1"));
      workers.push(worker);
      const queue = createQueueExecutor({ redis: redis.url, remote });
      const results: AttemptResult[] = [];
      try {
        for (const id of ["a", "b"])
          results.push(
            await queue.run(`# Sub-task ${id}: write a file`, {
              runId: "warm-run",
              subTask: subTask(id),
              attempt: 1,
              cwd,
              abortSignal: new AbortController().signal,
            }),
          );
      } finally {
        await queue.close();
      }
      expect(results.map((result) => result.outcome)).toEqual(["finished", "finished"]);
      expect(readFileSync(join(cwd, "job-2.txt"), "utf8")).toBe("x\n");
      // Counted: both attempts ran in the same `opencode serve` process, the only one started.
      const agents = results.map((result) => result.details?.pid);
      const agentsNote = `agent processes ${JSON.stringify(agents)}, executors ${JSON.stringify(results.map((result) => result.details?.executor))}`;
      expect(new Set(agents).size, agentsNote).toBe(1);
      expect(results.map((result) => result.details?.executor)).toEqual([
        "opencode-server",
        "opencode-server",
      ]);
      expect(serversOf(worker)).toEqual([agents[0]]);
      await worker.stop();
      expect(alive(agents[0] as number)).toBe(false);
    }, 180_000);
  },
);
