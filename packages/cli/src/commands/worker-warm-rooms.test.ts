import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AttemptResult, SubTask } from "@taskledger/core";
import { createQueueExecutor } from "@taskledger/queue";
import { afterToolResult, alive, redisTestsEnabled } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
// The queue's own fixtures, shared here rather than copied.
import { repositoryWithRemote } from "../../../queue/src/test-support/queue-fixtures.js";
import { builtCli } from "../test-support/cli-harness.js";
import { queueTestBed, serversOf, startWorker } from "../test-support/queue-workers.js";
import { writeCall } from "../test-support/scripted-replies.js";

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
    const bed = queueTestBed();

    it("two jobs in a row on one worker start one opencode server, which serves both and stops with the worker", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { root, remote, worktree } = repositoryWithRemote("taskledger-worker-warm-", {
        "README.md": "hello\n",
      });
      const cwd = worktree("attempt");
      let written = 0;
      const server = await bed.serve({
        replies: (request) =>
          afterToolResult(request) ? { text: "Done." } : writeCall(`job-${++written}.txt`, "x\n"),
      });
      const worker = await startWorker(bed.redis.url, server.openaiBaseURL, join(root, "w1"));
      bed.workers.push(worker);
      const queue = createQueueExecutor({ redis: bed.redis.url, remote });
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
