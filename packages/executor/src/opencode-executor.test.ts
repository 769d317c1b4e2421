import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentEvent, ExecuteOptions, SubTask } from "@taskledger/core";
import {
  createModelServer,
  type ModelServer,
  type RecordedRequest,
  type ScriptedReply,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { createOpencodeExecutor, type OpencodeExecutorOptions } from "./index.js";

const subTask: SubTask = {
  id: "s1",
  title: "s1",
  description: "s1",
  successCriteria: ["done"],
  dependsOn: [],
  checks: [],
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A server whose main-agent calls take `steps` in order; any other call is an error reply. */
async function scriptedServer(
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
}

async function workDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "executor-test-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function executorFor(server: ModelServer, options: Partial<OpencodeExecutorOptions> = {}) {
  return createOpencodeExecutor({
    model: "scripted/test-model",
    config: {
      provider: {
        scripted: {
          npm: "@ai-sdk/openai-compatible",
          name: "Scripted",
          options: { baseURL: server.openaiBaseURL, apiKey: "test-key" },
          models: { "test-model": { name: "Test model" } },
        },
      },
    },
    timeoutMs: 60_000,
    ...options,
  });
}

function runOptions(cwd: string, extra: Partial<ExecuteOptions> = {}): ExecuteOptions {
  return { subTask, attempt: 1, cwd, abortSignal: new AbortController().signal, ...extra };
}

describe("OpencodeExecutor on the real opencode CLI", () => {
  it("writes a file through the write tool and finishes with text", async () => {
    const server = await scriptedServer([
      {
        toolCalls: [{ name: "write", arguments: { filePath: "hello.txt", content: "hi there\n" } }],
      },
      { text: "I wrote hello.txt.", usage: { inputTokens: 50, outputTokens: 6 } },
    ]);
    const cwd = await workDir();
    const events: AgentEvent[] = [];
    const result = await executorFor(server).run(
      "Write hello.txt",
      runOptions(cwd, { onEvent: (e) => events.push(e) }),
    );
    console.log(JSON.stringify(result, null, 1));
    expect(result.outcome).toBe("finished");
    expect(await readFile(join(cwd, "hello.txt"), "utf8")).toBe("hi there\n");
  });
});
