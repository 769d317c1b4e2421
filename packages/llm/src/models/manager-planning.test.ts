import { createManager, type Evaluator, emptyUsage, taskLedgerSchemaName } from "@taskledger/core";
import { createFakeExecutor, createModelServer, type ModelServer } from "@taskledger/testing";
import { afterEach, expect, it } from "vitest";
import { createModel } from "../index.js";

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read loosely in assertions
type Loose = any;

let server: ModelServer;
afterEach(async () => {
  await server?.close();
});

// The plan declares checks, which core's default evaluator would refuse to leave unrun: this one
// (the subject here is planning over the wire) passes every attempt.
const evaluator: Evaluator = {
  evaluate: async () => ({
    completed: true,
    summary: "done",
    outputData: "",
    feedback: "",
    evidence: [],
    usage: emptyUsage(),
  }),
};

const plan = {
  subTasks: [
    {
      id: "helper",
      title: "Write slugify",
      description: "Add src/slugify.ts exporting slugify(text).",
      successCriteria: ["slugify('A B') returns 'a-b'"],
      dependsOn: [],
      checks: [{ type: "file-exists", path: "src/slugify.ts" }],
    },
    {
      id: "tests",
      title: "Test slugify",
      description: "Add tests for slugify.",
      successCriteria: ["npm test passes"],
      dependsOn: ["helper"],
      checks: [{ type: "command", argv: ["npm", "test"], timeoutMs: null }],
    },
  ],
};

it("plans for the core manager through the OpenAI SDK over HTTP", async () => {
  server = await createModelServer({
    replies: [{ text: JSON.stringify(plan), usage: { inputTokens: 900, outputTokens: 150 } }],
  });
  const model = createModel({
    provider: "openai",
    baseURL: server.openaiBaseURL,
    apiKey: "k",
    model: "m",
  });
  const executor = createFakeExecutor({ fallback: { type: "success", text: "done" } });
  // The planning call is the subject: no acceptance call at the end.
  const manager = createManager({
    cwd: process.cwd(),
    model,
    executor,
    evaluator,
    acceptance: false,
  });
  const report = await manager.start(
    "Add a slugify helper, then test it and document how to use it.",
  ).result;

  expect(report.status).toBe("completed");
  expect(report.subTasks.map((s) => s.id)).toEqual(["helper", "tests"]);
  expect(executor.calls.map((c) => c.subTaskId)).toEqual(["helper", "tests"]);
  expect(report.usage.manager).toMatchObject({ inputTokens: 900, outputTokens: 150 });
  const body = server.requests[0]?.body as Loose;
  expect(server.requests).toHaveLength(1);
  expect(body.model).toBe("m");
  expect(body.response_format.json_schema.name).toBe(taskLedgerSchemaName);
  expect(body.response_format.json_schema.strict).toBe(true);
});

it("lets the manager repair a plan whose graph is invalid, over the same wire", async () => {
  const cyclic = {
    subTasks: plan.subTasks.map((s) => (s.id === "helper" ? { ...s, dependsOn: ["tests"] } : s)),
  };
  server = await createModelServer({
    replies: [{ text: JSON.stringify(cyclic) }, { text: JSON.stringify(plan) }],
  });
  const model = createModel({
    provider: "anthropic",
    baseURL: server.anthropicBaseURL,
    apiKey: "k",
    model: "m",
  });
  const executor = createFakeExecutor({ fallback: { type: "success" } });
  const report = await createManager({
    cwd: process.cwd(),
    model,
    executor,
    evaluator,
    acceptance: false,
  }).start("Add a slugify helper, then test it and document how to use it.").result;
  expect(report.status).toBe("completed");
  expect(server.requests).toHaveLength(2);
  expect(JSON.stringify(server.requests[1]?.body)).toMatch(/cycle/);
});
