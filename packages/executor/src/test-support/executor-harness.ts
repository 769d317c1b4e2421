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
import {
  createOpencodeExecutor,
  createOpencodeServerExecutor,
  type OpencodeServerExecutorOptions,
} from "../index.js";

/** The two ways of running opencode the shared behaviour suite runs against. */
export type ExecutorKind = "cli" | "server";

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
    /** An executor of `kind` on `server`; a server executor's servers stop in `cleanup`. */
    executorFor(
      server: Pick<ModelServer, "openaiBaseURL">,
      options: Partial<OpencodeServerExecutorOptions> = {},
      kind: ExecutorKind = "cli",
    ) {
      const settings = {
        model: "scripted/test-model",
        config: { provider: scriptedOpencodeProvider(server) },
        // Generous: a slow machine makes a real opencode start take tens of seconds.
        timeoutMs: 120_000,
        ...options,
      };
      if (kind === "cli") return createOpencodeExecutor(settings);
      const executor = createOpencodeServerExecutor(settings);
      cleanups.push(() => executor.close());
      return executor;
    },
    runOptions(cwd: string, extra: Partial<ExecuteOptions> = {}): ExecuteOptions {
      return { subTask, attempt: 1, cwd, abortSignal: new AbortController().signal, ...extra };
    },
    async cleanup(): Promise<void> {
      // Last made, first closed: executors before the model servers they call.
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    },
  };
}
