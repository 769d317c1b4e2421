import { type Executor, InvalidConfigError } from "@taskledger/core";
import { redisTestsEnabled } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createQueueExecutor } from "../coordinator/queue-executor.js";
import {
  attemptResult,
  redisForTests,
  repositoryWithRemote,
  subTask,
} from "../test-support/queue-fixtures.js";
import { startAttemptWorker } from "./attempt-worker.js";
import type { JobAgentSettings } from "./warm-executors.js";

const enabled = redisTestsEnabled();

const finished = attemptResult();

describe.runIf(enabled)("a worker's executors per agent settings (real Redis, real git)", () => {
  const redis = redisForTests();

  it("keeps one executor across jobs of the same settings, makes another for other settings, and closes them with the worker", async () => {
    const { remote, worktree } = repositoryWithRemote("taskledger-queue-executors-");
    const cwd = worktree("attempt");
    const made: { settings: JobAgentSettings; runs: string[]; closed: boolean }[] = [];
    const executorFor = (settings: JobAgentSettings): Executor => {
      const entry = { settings, runs: [] as string[], closed: false };
      made.push(entry);
      return {
        async run(_prompt, options) {
          entry.runs.push(`${options.subTask.id}:${options.agentModel}`);
          return finished;
        },
        async close() {
          entry.closed = true;
        },
      };
    };
    const worker = await startAttemptWorker({ redis: redis().url, executorFor, queueName: "q-ex" });
    const queue = createQueueExecutor({ redis: redis().url, remote, queueName: "q-ex" });
    try {
      for (const [id, agentModel] of [
        ["a", "p/one"],
        ["b", "p/one"],
        ["c", "codex:gpt"],
      ] as const) {
        const ended = await queue.run("prompt", {
          runId: "run-ex",
          subTask: subTask(id),
          attempt: 1,
          cwd,
          agentModel,
          abortSignal: new AbortController().signal,
        });
        expect(ended.outcome).toBe("finished");
      }
    } finally {
      await queue.close();
      await worker.close();
    }
    expect(made).toEqual([
      { settings: { agentModel: "p/one" }, runs: ["a:p/one", "b:p/one"], closed: true },
      { settings: { agentModel: "codex:gpt" }, runs: ["c:codex:gpt"], closed: true },
    ]);
  });

  it("needs either an executor or a way to make one", async () => {
    const refused = await startAttemptWorker({ redis: redis().url }).catch((error) => error);
    expect(InvalidConfigError.isInstance(refused)).toBe(true);
  });
});
