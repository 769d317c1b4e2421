import { join } from "node:path";
import { expect } from "vitest";
import { agentBoundarySuite } from "../test-support/agent-boundary-suite.js";
import { executorSuite } from "../test-support/executor-suite.js";
import type { SuiteAgent } from "../test-support/suite-agent.js";
import { createClaudeCodeExecutor } from "./claude-code-executor.js";

const sse = (name: string, payload: unknown) =>
  `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;

// The real `claude` binary from npm, `--bare`, against the scripted server's Anthropic face.
const agent: SuiteAgent = {
  make: (server, options) =>
    createClaudeCodeExecutor({
      model: "test-model",
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps }),
      ...(options.binaryPath === undefined ? {} : { binaryPath: options.binaryPath }),
      // Claude Code's commander refuses an unknown permission mode before it starts.
      ...(options.badConfig ? { permissionMode: "ask-everyone" as "plan" } : {}),
      // `sleep` and `env` are no commands Claude Code runs unasked; the abort case's tool sleeps,
      // the environment case's prints `env`.
      allowedTools: ["Bash(sleep:*)", "Bash(env:*)"],
      ...(options.passEnv ? { passEnv: options.passEnv } : {}),
      ...(options.keepAttemptDirs ? { keepAttemptDirs: true } : {}),
      env: {
        ANTHROPIC_BASE_URL: server.anthropicBaseURL,
        ANTHROPIC_API_KEY: "test-key",
        CLAUDE_CODE_MAX_RETRIES: "1",
        ...options.env,
      },
    }),
  otherModel: { agentModel: "other-model", wire: "other-model" },
  write: (cwd, path, content) => ({
    name: "Edit",
    arguments: { file_path: join(cwd, path), old_string: "", new_string: content },
  }),
  shell: (command) => ({ name: "Bash", arguments: { command } }),
  noFinishStream: {
    contentType: "text/event-stream",
    rawBody:
      sse("message_start", {
        type: "message_start",
        message: {
          id: "m",
          type: "message",
          role: "assistant",
          model: "m",
          content: [],
          usage: { input_tokens: 1, output_tokens: 1 },
        },
      }) +
      sse("content_block_start", {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" },
      }) +
      sse("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text: "thinking" },
      }),
  },
  expects: {
    lengthContinues: 3,
    providerErrorRequests: 2,
    providerErrorExit: 1,
    statusCodeOf: (status) => status,
    // Claude Code reports its own next delay (`api_retry`), never the provider's Retry-After.
    retryAfter: false,
    limitProvider: "anthropic",
    writeListsFile: true,
    perStepUsage: true,
    leaderExits: true,
    installHint: "npm install @anthropic-ai/claude-code",
    badConfigError: /^claude-code rejected its config: option '--permission-mode/,
    readOnlyRefusal: /while in plan mode/,
    commandRefused(result) {
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ permissionRejected: true });
      expect(result.error).toContain("outside the working directories");
    },
    hangTimeoutMs: 5000,
  },
};
executorSuite("the Claude Code executor on the real claude binary", agent);
agentBoundarySuite("the Claude Code executor on the real claude binary", agent, {
  // Claude Code names the refusal in its retry notice; the attempt ends on the first.
  refusalMessage: /authentication_failed/,
  dirPrefix: "taskledger-claude-code-",
  refusedRequests: 2,
});
