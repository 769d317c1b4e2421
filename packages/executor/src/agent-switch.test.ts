import type { AttemptResult, ExecuteOptions, Executor } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { type AgentName, AgentSwitchExecutor, parseAgentModel } from "./agent-switch.js";
import { subTask } from "./test-support/executor-harness.js";

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
