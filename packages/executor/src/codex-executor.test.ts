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
    commandRefused(result) {
      // Codex asks nobody (`approval_policy = never`): its sandbox refuses the write instead.
      expect(result.outcome).toBe("finished");
      expect(result.toolCalls[0]).toMatchObject({ tool: "bash", status: "error" });
      expect(result.toolCalls[0]?.output).toContain("Read-only file system");
    },
    hangTimeoutMs: 5000,
  },
});
