import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../log/run-events.js";
import { task } from "../test-support/sub-task-fixture.js";
import { addUsage, knownCost } from "../usage/usage.js";
import { createManager } from "./manager.js";

const plan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] };

describe("a money budget with usage of unknown cost", () => {
  it("warns once (budget-unenforceable) when an executor reports tokens but no cost, and never counts them as $0", async () => {
    // The testing kit's executor, like any host executor, reports tokens and no cost.
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      budget: { maxCostUsd: 1 },
    }).run("x", { plan, onEvent: (e) => events.push(e) });
    expect(events.filter((e) => e.type === "budget-unenforceable")).toEqual([
      expect.objectContaining({
        kind: "cost",
        limit: 1,
        unpricedModels: ["the executor's agent model"],
      }),
    ]);
    expect(report.usage.agents.inputTokens).toBe(3000);
    expect(report.usage.agents.costUsd).toBeUndefined();
    expect(report.usage.agents.unpricedModels).toEqual(["the executor's agent model"]);
    expect(knownCost(addUsage(report.usage.manager, report.usage.agents))).toBeUndefined();
  });

  it("names the agent model an attempt ran on, and keeps a priced attempt's cost as a lower bound", async () => {
    const executor = createFakeExecutor({
      script: {
        a: [{ type: "success", usage: { inputTokens: 600, outputTokens: 100, costUsd: 0.75 } }],
        b: [{ type: "truncated" }, { type: "success" }],
        c: [{ type: "success", usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01 } }],
      },
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      maxRetries: 0,
      alternateAgentModels: ["other/model"],
      budget: { maxCostUsd: 1 },
    }).run("x", { plan, onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    // b's first attempt ran on the executor's model, its second on the alternate: each named once.
    expect(
      events.flatMap((e) => (e.type === "budget-unenforceable" ? e.unpricedModels : [])),
    ).toEqual(["the executor's agent model", "other/model"]);
    expect(report.usage.agents.costUsd).toBeCloseTo(0.76);
    expect(report.usage.agents.unpricedModels).toEqual([
      "other/model",
      "the executor's agent model",
    ]);
    expect(knownCost(report.usage.agents)).toBeUndefined();
  });

  it("names a host model that reports tokens but no cost by its provider and id", async () => {
    const model = createScriptedModel({
      provider: "host",
      modelId: "planner-1",
      responses: [{ object: plan }],
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      model,
      decompose: "always",
      replan: { enabled: false },
      executor: createFakeExecutor({
        fallback: { type: "success", usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.001 } },
      }),
      budget: { maxCostUsd: 5 },
    }).run("Do a, then b, then c.", { onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    expect(events.filter((e) => e.type === "budget-unenforceable")).toEqual([
      expect.objectContaining({ unpricedModels: ["host/planner-1"] }),
    ]);
    expect(report.usage.manager.unpricedModels).toEqual(["host/planner-1"]);
  });
});
