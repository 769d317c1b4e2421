import {
  progressJudgmentSchema,
  progressJudgmentSchemaName,
  taskLedgerSchema,
  taskLedgerSchemaName,
} from "@taskledger/core";
import { createModelServer, type ModelServer, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createModel, type JsonMode, type Provider } from "../index.js";

// @taskledger/testing's scriptByRole, against what each SDK really sends in each JSON mode.
const plan = {
  subTasks: [
    { id: "a", title: "A", description: "do a", successCriteria: ["a"], dependsOn: [], checks: [] },
  ],
};
const verdict = { completed: true, summary: "Done.", outputData: "", feedback: "" };

const baseURL: Record<Provider, (s: ModelServer) => string> = {
  anthropic: (s) => s.anthropicBaseURL,
  openai: (s) => s.openaiBaseURL,
  xai: (s) => s.openaiBaseURL,
  "openai-compatible": (s) => s.openaiBaseURL,
  google: (s) => s.googleBaseURL,
};
const cases: [Provider, JsonMode][] = [
  ["openai", "schema"],
  ["openai", "json-object"],
  ["openai-compatible", "prompt"],
  ["anthropic", "schema"],
  ["anthropic", "tool"],
  ["google", "schema"],
  ["google", "json-object"],
];

describe("scriptByRole tells the planner, the judge and an agent apart on the wire", () => {
  it.each(cases)("%s in %s mode", async (provider, jsonMode) => {
    const server = await createModelServer({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: { text: JSON.stringify(verdict) },
        agent: { text: "agent turn" },
      }),
    });
    try {
      const model = createModel({
        provider,
        model: "scripted",
        apiKey: "test-key",
        baseURL: baseURL[provider](server),
        jsonMode,
      });
      const ask = [{ role: "user" as const, content: "go" }];
      const planned = await model.generate({
        messages: ask,
        output: { name: taskLedgerSchemaName, schema: taskLedgerSchema },
      });
      const judged = await model.generate({
        messages: ask,
        output: { name: progressJudgmentSchemaName, schema: progressJudgmentSchema },
      });
      const agent = await model.generate({ messages: ask });
      // Parsed, the plan has its defaults (no facts, no paths) filled in.
      const parsed = taskLedgerSchema.parse(plan);
      expect([planned.object, judged.object, agent.text]).toEqual([parsed, verdict, "agent turn"]);
      expect(server.unexpected).toBe(0);
    } finally {
      await server.close();
    }
  });
});
