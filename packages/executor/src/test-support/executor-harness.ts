// What the executor's tests share: a scripted server, work directories and an executor on them.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecuteOptions, SubTask } from "@taskledger/core";
import {
  createModelServer,
  type ModelServer,
  type RecordedRequest,
  type ScriptedReply,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { createOpencodeExecutor, type OpencodeExecutorOptions } from "../index.js";

/** The one sub-task the executor's tests attempt: the executor only passes it on. */
export const subTask: SubTask = {
  id: "s1",
  title: "s1",
  description: "s1",
  successCriteria: ["done"],
  dependsOn: [],
  checks: [],
};

/**
 * Helpers whose servers and directories are closed and removed by `cleanup`. `workRoot`: where
 * work directories go (called at each use, so a test may move the temp directory first).
 */
export function executorHarness(workRoot: () => string = tmpdir) {
  const cleanups: (() => Promise<void>)[] = [];
  return {
    cleanups,
    /** A server whose main-agent calls take `steps` in order; any other call is an error reply. */
    async scriptedServer(
      steps: ScriptedReply[],
    ): Promise<ModelServer & { extra: RecordedRequest[] }> {
      const extra: RecordedRequest[] = [];
      const server = await createModelServer({
        replies: (request) => {
          const next = steps.shift();
          if (next) return next;
          extra.push(request);
          return { status: 400, body: { error: { message: "no scripted step left" } } };
        },
      });
      cleanups.push(() => server.close());
      return Object.assign(server, { extra });
    },
    async workDir(): Promise<string> {
      const dir = await mkdtemp(join(workRoot(), "executor-test-"));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    executorFor(server: ModelServer, options: Partial<OpencodeExecutorOptions> = {}) {
      return createOpencodeExecutor({
        model: "scripted/test-model",
        config: { provider: scriptedOpencodeProvider(server) },
        timeoutMs: 60_000,
        ...options,
      });
    },
    runOptions(cwd: string, extra: Partial<ExecuteOptions> = {}): ExecuteOptions {
      return { subTask, attempt: 1, cwd, abortSignal: new AbortController().signal, ...extra };
    },
    async cleanup(): Promise<void> {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    },
  };
}
