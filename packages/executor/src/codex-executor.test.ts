import { join } from "node:path";
import { expect } from "vitest";
import { createCodexExecutor } from "./codex-executor.js";
import { executorSuite } from "./test-support/executor-suite.js";

const sse = (name: string, payload: object) =>
  `event: ${name}\ndata: ${JSON.stringify({ type: name, ...payload })}\n\n`;

// The real `codex` binary from npm, in its workspace-write sandbox, against the Responses face.
executorSuite("the Codex executor on the real codex binary", {
  make: (server, options) =>
    createCodexExecutor({
      model: "test-model",
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps }),
      ...(options.binaryPath === undefined ? {} : { binaryPath: options.binaryPath }),
      provider: {
        baseUrl: server.openaiBaseURL,
        envKey: "SCRIPTED_KEY",
        requestMaxRetries: 0,
        streamMaxRetries: 0,
      },
      ...(options.badConfig ? { config: { no_such_setting: true } } : {}),
      env: { SCRIPTED_KEY: "test-key", ...options.env },
    }),
  otherModel: { agentModel: "other-model", wire: "other-model" },
  // Codex writes files through its shell (its patch tool needs model metadata it has not got here).
  write: (cwd, path, content) => ({
    name: "exec_command",
    arguments: {
      cmd: `echo ${Buffer.from(content).toString("base64")} | base64 -d > ${join(cwd, path)}`,
    },
  }),
  shell: (command) => ({ name: "exec_command", arguments: { cmd: command } }),
  noFinishStream: {
    contentType: "text/event-stream",
    rawBody:
      sse("response.created", {
        response: { id: "r", object: "response", status: "in_progress", output: [] },
      }) +
      sse("response.output_text.delta", {
        item_id: "m",
        output_index: 0,
        content_index: 0,
        delta: "thinking",
      }),
  },
  expects: {
    lengthContinues: 0,
    providerErrorRequests: 1,
    providerErrorExit: 1,
    statusCode: false,
    writeListsFile: false,
    perStepUsage: false,
    leaderExits: true,
    installHint: "npm install @openai/codex",
    badConfigError: /^codex rejected its config: .*unknown configuration field `no_such_setting`/,
    readOnlyRefusal: /Read-only file system/,
    commandRefused(result, requests) {
      // Codex asks nobody (`approval_policy = never`): its sandbox refuses the write instead, and
      // the model is told so.
      expect(result.outcome).toBe("finished");
      expect(JSON.stringify(requests.at(-1)?.body)).toContain("Read-only file system");
      // Codex 0.169's `exec --json` may leave a refused command out of its stream (it did in every
      // run here on 2026-11-24); one it does report is an error.
      for (const call of result.toolCalls) {
        expect(call).toMatchObject({ tool: "bash", status: "error" });
        expect(call.output).toContain("Read-only file system");
      }
    },
    hangTimeoutMs: 5000,
  },
});
