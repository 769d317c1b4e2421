import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type AttemptResult, createManager, type Executor, type RunEvent } from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { gitIn, redisTestsEnabled } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createQueueExecutor } from "../coordinator/queue-executor.js";
import {
  attemptResult,
  redisForTests,
  repositoryWithRemote,
} from "../test-support/queue-fixtures.js";
import { startAttemptWorker } from "./attempt-worker.js";

const enabled = redisTestsEnabled();

/** On the worker: writes inside.txt where it runs and, as a script would, ROOT_CONFIG.txt two up. */
const escaping: Executor = {
  async run(_prompt, options): Promise<AttemptResult> {
    await writeFile(join(options.cwd, "inside.txt"), "y\n");
    await writeFile(join(options.cwd, "../../ROOT_CONFIG.txt"), "x\n");
    return attemptResult();
  },
};

describe.runIf(enabled)(
  "a worker's change outside the run's directory (real Redis, real git)",
  () => {
    const redis = redisForTests();

    it("is left out of the attempt's work, never merged or applied, and named on the attempt", async () => {
      const { repo, remote } = repositoryWithRemote("taskledger-queue-outside-", {
        "README.md": "top\n",
        "packages/app/index.js": "app\n",
      });
      const cwd = join(repo, "packages/app");
      mkdirSync(cwd, { recursive: true });
      const worker = await startAttemptWorker({
        redis: redis().url,
        executor: escaping,
        queueName: "outside",
      });
      const executor = createQueueExecutor({ redis: redis().url, remote, queueName: "outside" });
      try {
        const events: RunEvent[] = [];
        const manager = createManager({
          executor,
          cwd,
          workspaces: gitWorkspaces({ slots: false }),
          replan: { enabled: false },
        });
        const step = {
          id: "a",
          title: "A",
          description: "A",
          successCriteria: ["a"],
          dependsOn: [],
        };
        const report = await manager.run("x", {
          plan: { subTasks: [step] },
          onEvent: (e) => events.push(e),
        });

        expect(report.status).toBe("completed");
        const finished = events.find((e) => e.type === "attempt-finished");
        expect(finished).toMatchObject({
          result: { outsideCwd: { paths: ["ROOT_CONFIG.txt"], count: 1 } },
        });
        expect(report.subTasks[0]).toMatchObject({
          filesChanged: ["packages/app/inside.txt"],
          outsideCwd: [{ attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 1 }],
        });
        expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("y\n");
        expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
        expect(gitIn(repo, "status", "--porcelain", "-uall")).toBe("?? packages/app/inside.txt");
      } finally {
        await executor.close();
        await worker.close();
      }
    });
  },
);
