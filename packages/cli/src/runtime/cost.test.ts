import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { agentArgs, runJson, testScratch } from "../test-support/cli-harness.js";
import { completedJudge } from "../test-support/scripted-replies.js";
import { compatibleProviderId } from "./runtime.js";

const plan = {
  subTasks: [
    {
      id: "one",
      title: "Write one.txt",
      description: "Write one.txt",
      dependsOn: [],
      successCriteria: ["one.txt exists"],
    },
    {
      id: "two",
      title: "Write two.txt",
      description: "Write two.txt",
      dependsOn: ["one"],
      successCriteria: ["two.txt exists"],
    },
  ],
};
const agentModel = `${compatibleProviderId}/agent-x`;
// Dollars per million tokens, round enough that the expected cost is easy to read.
const prices = {
  "openai-compatible/m": { inputPerMillion: 10, outputPerMillion: 20 },
  [agentModel]: { inputPerMillion: 1, outputPerMillion: 2, cacheReadPerMillion: 0.5 },
};

const scratch = testScratch();

async function run(extra: string[]) {
  const server = await scratch.server({
    replies: scriptByRole({
      plan: { text: JSON.stringify(plan), usage: { inputTokens: 1000, outputTokens: 200 } },
      judge: { ...completedJudge("done", "done"), usage: { inputTokens: 500, outputTokens: 50 } },
      agent: { text: "Done.", usage: { inputTokens: 3000, outputTokens: 100 } },
    }),
  });
  const cwd = await scratch.directory("taskledger-cost-");
  await writeFile(join(cwd, "prices.json"), JSON.stringify(prices));
  const { code, report, err } = await runJson(
    "Write one.txt and then two.txt",
    [
      ...agentArgs(server.openaiBaseURL, "agent-x"),
      "--concurrency",
      "1",
      "--max-retries",
      "0",
      ...extra,
    ],
    { cwd },
  );
  return { code, report, err: err() };
}

const dollars = (
  u: { inputTokens: number; outputTokens: number; cacheReadTokens: number },
  p: { inputPerMillion: number; outputPerMillion: number; cacheReadPerMillion?: number },
) =>
  (u.inputTokens * p.inputPerMillion +
    u.outputTokens * p.outputPerMillion +
    u.cacheReadTokens * (p.cacheReadPerMillion ?? p.inputPerMillion)) /
  1e6;

describe("cost (real opencode, scripted provider)", () => {
  it("prices manager, judge and agent calls from the host's prices, per sub-task and attempt", async () => {
    const { code, report, err } = await run(["--prices", "prices.json"]);
    expect(code, err).toBe(0);
    const { manager, agents, total } = report.usage;
    expect(manager.unpricedModels).toBeUndefined();
    expect(agents.unpricedModels).toBeUndefined();
    expect(manager.costUsd).toBeCloseTo(dollars(manager, prices["openai-compatible/m"]), 9);
    expect(agents.costUsd).toBeCloseTo(dollars(agents, prices[agentModel]!), 9);
    expect(agents.costUsd).toBeGreaterThan(0);
    expect(total.costUsd).toBeCloseTo(manager.costUsd! + agents.costUsd!, 9);
    for (const s of report.subTasks) {
      expect(s.usage?.attempts).toHaveLength(1);
      expect(s.usage?.agents.costUsd).toBeGreaterThan(0);
      expect(s.usage?.evaluation.costUsd).toBeGreaterThan(0);
    }
    const perSubTask = report.subTasks.reduce((sum, s) => sum + s.usage!.agents.costUsd!, 0);
    expect(perSubTask).toBeCloseTo(agents.costUsd!, 9);
    expect(err).toMatch(/total \d+ \(\$\d+\.\d{4}\)/);
    expect(err).not.toContain("unknown");
  }, 120_000);

  it("shows an unknown price as unknown, naming each model once, never as $0.0000; a --max-cost it cannot enforce is warned about", async () => {
    const { code, report, err } = await run(["--max-cost", "5"]);
    expect(code, err).toBe(0);
    expect(report.usage.total.costUsd).toBeUndefined();
    expect(report.usage.total.unpricedModels).toEqual(["openai-compatible/m", agentModel]);
    expect(err).not.toContain("$0.0000");
    expect(err).toContain("unknown");
    const named = err.match(/no price for [^\n]*/g) ?? [];
    expect(named).toEqual([
      `no price for openai-compatible/m, ${agentModel} (give one with --prices FILE)`,
    ]);
    // The budget cannot stop what it cannot count: said once for each model, as it shows up.
    const warned = err.match(/warning: --max-cost .*/g) ?? [];
    expect(warned).toEqual([
      "warning: --max-cost $5 cannot be enforced for openai-compatible/m: no price is known, so their spend is not counted",
      `warning: --max-cost $5 cannot be enforced for ${agentModel}: no price is known, so their spend is not counted`,
    ]);
    expect(report.status).toBe("completed");
  }, 120_000);

  it("--max-cost stops the run like the other budgets, with the reason in the report", async () => {
    const { code, report, err } = await run(["--prices", "prices.json", "--max-cost", "0.02"]);
    expect(code, err).toBe(1);
    expect(report.status).toBe("partial");
    expect(report.reason).toMatch(/cost budget of \$0\.02 was reached/);
    expect(report.subTasks.map((s) => s.status)).toEqual(["completed", "skipped"]);
  }, 120_000);
});
