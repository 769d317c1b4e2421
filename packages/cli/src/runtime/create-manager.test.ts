import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createManager } from "../index.js";

const plan = {
  subTasks: [
    { id: "a", title: "A", description: "Write a.txt", successCriteria: ["a.txt exists"] },
  ],
};

describe("taskledger's createManager", () => {
  it("judges attempts with the evaluator package when a model is given", async () => {
    const model = createScriptedModel({
      responses: [
        {
          object: {
            completed: false,
            summary: "no file",
            outputData: "",
            feedback: "Create a.txt with the answer.",
          },
        },
        {
          object: {
            completed: true,
            summary: "a.txt written",
            outputData: "a.txt: 42",
            feedback: "",
          },
        },
      ],
    });
    const executor = createFakeExecutor({
      fallback: { type: "success", text: "I think I am done." },
    });
    const report = await createManager({ cwd: process.cwd(), model, executor }).run("x", { plan });
    expect(model.calls.map((c) => c.output?.name)).toEqual([
      "progress_ledger_entry",
      "progress_ledger_entry",
    ]);
    expect(executor.calls[1]?.prompt).toContain("Create a.txt with the answer.");
    expect(report.subTasks[0]).toMatchObject({
      status: "completed",
      attempts: 2,
      outputData: "a.txt: 42",
    });
  });

  it("keeps core's finish-reason evaluator without a model, and an explicit evaluator always", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    expect((await createManager({ cwd: process.cwd(), executor }).run("x", { plan })).status).toBe(
      "completed",
    );
    const model = createScriptedModel();
    const evaluator = {
      evaluate: async () => ({
        completed: true,
        summary: "s",
        outputData: "o",
        feedback: "",
        evidence: [],
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      }),
    };
    const report = await createManager({ cwd: process.cwd(), model, executor, evaluator }).run(
      "x",
      { plan },
    );
    expect(report.subTasks[0]?.outputData).toBe("o");
    expect(model.calls).toHaveLength(0);
  });
});
