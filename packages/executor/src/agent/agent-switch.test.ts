import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttemptResult,
  createManager,
  type ExecuteOptions,
  type Executor,
  ExecutorError,
  InvalidConfigError,
} from "@taskledger/core";
import { afterToolResult, createModelServer } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createClaudeCodeExecutor } from "../claude-code/claude-code-executor.js";
import { createCodexExecutor } from "../codex/codex-executor.js";
import { subTask } from "../test-support/executor-harness.js";
import { type AgentName, AgentSwitchExecutor, parseAgentModel } from "./agent-switch.js";

describe("parseAgentModel", () => {
  it("reads an agent prefix, and leaves a bare or provider/model name to the run's agent", () => {
    expect(parseAgentModel("claude-code:sonnet")).toEqual({
      agent: "claude-code",
      model: "sonnet",
    });
    expect(parseAgentModel("codex:gpt-5-codex")).toEqual({ agent: "codex", model: "gpt-5-codex" });
    expect(parseAgentModel("opencode:anthropic/claude-sonnet-4-5")).toEqual({
      agent: "opencode",
      model: "anthropic/claude-sonnet-4-5",
    });
    expect(parseAgentModel("anthropic/claude-sonnet-4-5")).toEqual({
      model: "anthropic/claude-sonnet-4-5",
    });
    expect(() => parseAgentModel("codex:")).toThrow(/names an agent but no model/);
  });
});

describe("AgentSwitchExecutor", () => {
  it("runs an attempt whose model names another agent on that agent, made once", async () => {
    const made: string[] = [];
    const runs: string[] = [];
    // The collaborators are the subject's: executors that only say who ran what.
    const make = (agent: AgentName, model: string): Executor => {
      made.push(`${agent} ${model}`);
      return {
        run: async (_prompt: string, options: ExecuteOptions) => {
          runs.push(`${agent} ${options.agentModel ?? model}`);
          return { outcome: "finished" } as AttemptResult;
        },
      };
    };
    const executor = new AgentSwitchExecutor("opencode", make, "anthropic/claude-sonnet-4-5");
    const options = { subTask, attempt: 1, cwd: "/tmp", abortSignal: new AbortController().signal };
    await executor.run("p", options);
    await executor.run("p", { ...options, agentModel: "codex:gpt-5-codex" });
    await executor.run("p", { ...options, agentModel: "codex:o4" });
    await executor.run("p", { ...options, agentModel: "openai/gpt-5" });
    expect(made).toEqual(["opencode anthropic/claude-sonnet-4-5", "codex gpt-5-codex"]);
    expect(runs).toEqual([
      "opencode anthropic/claude-sonnet-4-5",
      "codex gpt-5-codex",
      "codex o4",
      "opencode openai/gpt-5",
    ]);
  });
});

describe("AgentSwitchExecutor.preflight", () => {
  it("gives each agent a run may use its own models, and passes on what an agent refuses", async () => {
    const checked: string[] = [];
    const make = (agent: AgentName, model: string): Executor => ({
      run: async () => ({ outcome: "finished" }) as AttemptResult,
      preflight: async ({ agentModels }) => {
        if (agentModels.includes("unknown")) throw new InvalidConfigError(`${agent}: unknown`);
        checked.push(`${agent} ${model}: ${agentModels.join(",")}`);
      },
    });
    const abortSignal = new AbortController().signal;
    const executor = new AgentSwitchExecutor("opencode", make, "anthropic/claude-sonnet-4-5");
    await executor.preflight({
      agentModels: ["openai/gpt-5", "codex:gpt-5-codex", "codex:o4"],
      abortSignal,
    });
    expect(checked).toEqual([
      "opencode anthropic/claude-sonnet-4-5: openai/gpt-5",
      "codex gpt-5-codex: gpt-5-codex,o4",
    ]);
    const refused = await executor
      .preflight({ agentModels: ["claude-code:unknown"], abortSignal })
      .catch((error: unknown) => error);
    expect(InvalidConfigError.isInstance(refused)).toBe(true);
  });

  it("a missing Claude Code or Codex binary is refused before planning, saying how to install it", async () => {
    const abortSignal = new AbortController().signal;
    for (const executor of [
      createClaudeCodeExecutor({ model: "sonnet", binaryPath: "/nonexistent/claude" }),
      createCodexExecutor({ model: "gpt-5-codex", binaryPath: "/nonexistent/codex" }),
    ]) {
      const error = await executor
        .preflight({ agentModels: [], abortSignal })
        .catch((e: unknown) => e);
      expect(ExecutorError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/not found.*npm install/);
    }
  });
});

describe("escalation to another agent, on the real claude and codex binaries", () => {
  it("a sub-task cut off twice on Claude Code completes on its Codex alternate", async () => {
    const cwd = await mkdtemp(join(tmpdir(), "agent-switch-"));
    // Claude Code (Anthropic face) is always cut off; Codex (Responses face) writes and finishes.
    const server = await createModelServer({
      replies: (request) => {
        if (request.face === "anthropic") return { text: "Half of", finishReason: "length" };
        if (afterToolResult(request)) return { text: "Wrote out.txt." };
        return {
          toolCalls: [{ name: "exec_command", arguments: { cmd: "printf ok > out.txt" } }],
        };
      },
    });
    try {
      const make = (agent: AgentName, model: string): Executor =>
        agent === "codex"
          ? createCodexExecutor({
              model,
              provider: { baseUrl: server.openaiBaseURL, envKey: "SCRIPTED_KEY" },
              env: { SCRIPTED_KEY: "test-key" },
            })
          : createClaudeCodeExecutor({
              model,
              env: { ANTHROPIC_BASE_URL: server.anthropicBaseURL, ANTHROPIC_API_KEY: "test-key" },
            });
      const manager = createManager({
        executor: new AgentSwitchExecutor("claude-code", make, "test-model"),
        maxRetries: 1,
        alternateAgentModels: ["codex:test-model"],
        replan: { enabled: false },
      });
      const report = await manager.run("Write out.txt", { cwd });
      expect(report.status).toBe("completed");
      expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 3 });
      expect(await readFile(join(cwd, "out.txt"), "utf8")).toBe("ok");
      const faces = server.requests.map((r) => r.face);
      expect(faces.filter((face) => face === "anthropic")).toHaveLength(8);
      expect(faces.filter((face) => face === "responses")).toHaveLength(2);
    } finally {
      await server.close();
      await rm(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
