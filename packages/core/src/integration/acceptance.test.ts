import { createFakeExecutor } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { ModelError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { GenerateRequest, GenerateResult, LanguageModel } from "../ports/model.js";
import { createManager } from "../run/manager.js";
import { MemoryRunStore } from "../store/run-store.js";
import { of } from "../test-support/memory-workspaces.js";
import { task } from "../test-support/sub-task-fixture.js";
import { acceptanceSchemaName } from "./acceptance.js";

type Answer = unknown | Error;

/** A model answering each structured call by the name of what it asks for, from a queue each. */
function modelByOutput(queues: Record<string, Answer[]>) {
  const calls: GenerateRequest<unknown>[] = [];
  const model: LanguageModel & { calls: typeof calls } = {
    provider: "scripted",
    modelId: "by-output",
    calls,
    async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
      calls.push(request as GenerateRequest<unknown>);
      const name = request.output?.name ?? "text";
      const answer = queues[name]?.shift();
      if (answer === undefined) throw new Error(`no answer queued for ${name}`);
      if (answer instanceof Error) throw answer;
      return {
        text: JSON.stringify(answer),
        object: request.output!.schema.parse(answer) as T,
        usage: { inputTokens: 300, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0 },
        finishReason: "stop",
      };
    },
  };
  return model;
}

const unmet = {
  satisfied: false,
  missing: [{ what: "the README documents `total`", why: "the request asks for it" }],
};
const met = { satisfied: true, missing: [] };
const docsPlan = {
  subTasks: [
    {
      id: "readme",
      title: "Document total in the README",
      description: "Add a section on total(xs) to README.md.",
      successCriteria: ["README.md documents total"],
      dependsOn: ["calc"],
      checks: [],
    },
  ],
};
const plan = { subTasks: [task("lib"), task("calc", ["lib"])] };

describe("the acceptance", () => {
  it("names a requirement no sub-task covered; one continuation sub-task does it and the run completes", async () => {
    const model = modelByOutput({
      [acceptanceSchemaName]: [unmet, met],
      task_ledger: [docsPlan],
    });
    const executor = createFakeExecutor({ fallback: { type: "success", text: "done" } });
    const records: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), model, executor, project: false }).run(
      "add total, and document it in the README",
      { plan, onEvent: (e) => records.push(e) },
    );
    expect(report.status).toBe("completed");
    expect(of(records, "acceptance-judged").map((e) => e.verdict)).toEqual([
      "unsatisfied",
      "satisfied",
    ]);
    const [revised] = of(records, "plan-revised");
    expect(revised).toMatchObject({ replaced: [], added: ["readme"], acceptance: 1 });
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["lib", "calc", "readme"]);
    // The judge read the request, each sub-task and its outcome.
    const judged = model.calls.find((c) => c.output?.name === acceptanceSchemaName)!;
    const prompt = judged.messages[0]!.content;
    expect(prompt).toContain("add total, and document it in the README");
    expect(prompt).toMatch(/- calc \[completed\]: Title calc/);
    expect(report.acceptance).toMatchObject({
      verdict: "satisfied",
      rounds: 2,
      missing: [],
      continued: ["readme"],
    });
    // Its calls are the manager's: two verdicts and the continuation's plan.
    expect(report.usage.manager.inputTokens).toBe(900);
  });

  it("still unsatisfied after its rounds: partial, naming what is missing", async () => {
    const model = modelByOutput({
      [acceptanceSchemaName]: [unmet, unmet],
      task_ledger: [docsPlan],
    });
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      project: false,
      acceptance: { rounds: 1 },
    }).run("add total, and document it in the README", { plan });
    expect(report.status).toBe("partial");
    expect(report.reason).toContain("the README documents `total`");
    expect(report.acceptance).toMatchObject({ verdict: "unsatisfied", rounds: 2 });
    expect(report.subTasks.every((s) => s.status === "completed")).toBe(true);
  });

  it("a judge that cannot answer leaves the checked work standing, and says so", async () => {
    const model = modelByOutput({
      [acceptanceSchemaName]: [
        new ModelError({ message: "provider down", provider: "scripted", isRetryable: false }),
      ],
    });
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      project: false,
    }).run("x", { plan });
    expect(report.status).toBe("completed");
    expect(report.acceptance).toMatchObject({
      verdict: "unavailable",
      reason: expect.stringContaining("provider down"),
    });
  });

  it("a plan of one sub-task is not judged again as a whole; `acceptance: false` asks nothing", async () => {
    for (const [given, subTasks] of [
      [undefined, [task("only")]],
      [false, plan.subTasks],
    ] as const) {
      const model = modelByOutput({});
      const report = await createManager({
        cwd: process.cwd(),
        model,
        executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
        project: false,
        ...(given === false ? { acceptance: false } : {}),
      }).run("x", { plan: { subTasks: [...subTasks] } });
      expect(report.status).toBe("completed");
      expect(model.calls).toEqual([]);
      expect(report.acceptance).toBeUndefined();
    }
  });

  it("resumed after a crash during the acceptance call, asks it once and finishes", async () => {
    const store = new MemoryRunStore();
    const model = modelByOutput({ [acceptanceSchemaName]: [met] });
    const executor = createFakeExecutor({ fallback: { type: "success", text: "done" } });
    await createManager({
      cwd: process.cwd(),
      model,
      executor,
      project: false,
      store,
      createRunId: () => "run-a",
    }).run("x", { plan });
    const records = await store.read("run-a");
    const cut = records.findIndex((r) => r.type === "acceptance-judged");
    const crashed = new MemoryRunStore();
    for (const record of records.slice(0, cut)) await crashed.append("run-a", record);
    const again = modelByOutput({ [acceptanceSchemaName]: [met] });
    const resumed = createFakeExecutor();
    const report = await createManager({
      cwd: process.cwd(),
      model: again,
      executor: resumed,
      project: false,
      store: crashed,
    }).resume("run-a").result;
    expect(report.status).toBe("completed");
    expect(resumed.calls).toEqual([]);
    expect(again.calls.map((c) => c.output?.name)).toEqual([acceptanceSchemaName]);
    expect(report.acceptance?.verdict).toBe("satisfied");
  });
});
