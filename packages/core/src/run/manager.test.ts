import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import {
  InvalidConfigError,
  InvalidRequestError,
  ModelError,
  PlanValidationError,
  StoreError,
  StructuredOutputError,
  UnexpectedCallError,
} from "../errors/errors.js";
import { acceptanceSchemaName } from "../integration/acceptance.js";
import type { RunEvent } from "../log/run-events.js";
import type { Evaluator } from "../ports/evaluator.js";
import { MemoryRunStore } from "../store/run-store.js";
import { passedEntry, task } from "../test-support/sub-task-fixture.js";
import { createManager } from "./manager.js";

const diamond = {
  subTasks: [task("a"), task("b", ["a"]), task("c", ["a"]), task("d", ["b", "c"])],
};
const longRequest = "Build the parser, then write its tests and finally document it in the README.";

describe("planning", () => {
  it("plans with one structured call named task_ledger", async () => {
    const model = createScriptedModel({ responses: [{ object: diamond }] });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({ cwd: process.cwd(), model, executor }).run(longRequest);
    expect(report.status).toBe("completed");
    // The plan's one call; the other is the acceptance judge's once every sub-task is done.
    expect(model.calls.map((c) => c.output?.name)).toEqual(["task_ledger", acceptanceSchemaName]);
    expect(model.calls[0]?.messages[0]?.content).toContain(longRequest);
    expect(report.subTasks.map((s) => s.id)).toEqual(["a", "b", "c", "d"]);
  });

  it("repairs an invalid plan once, showing the model the validation error", async () => {
    const model = createScriptedModel({
      responses: [
        { object: { subTasks: [task("a", ["nope"])] } },
        { object: { subTasks: [task("a")] } },
      ],
    });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), model, executor }).run(longRequest, {
      onEvent: (e) => events.push(e),
    });
    expect(report.status).toBe("completed");
    expect(model.calls).toHaveLength(2);
    const repair = model.calls[1]!.messages;
    expect(repair.at(-2)?.role).toBe("assistant");
    expect(repair.at(-1)?.content).toContain('depends on unknown sub-task "nope"');
    expect(events.find((e) => e.type === "plan-created")).toMatchObject({ repaired: true });
  });

  it("counts the tokens of an unusable plan answer in the report", async () => {
    const usage = { inputTokens: 300, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0 };
    const model = createScriptedModel({
      responses: [
        { error: new StructuredOutputError("not JSON", { text: "Sure!", usage }) },
        { object: { subTasks: [task("a")] } },
      ],
    });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({ cwd: process.cwd(), model, executor }).run(longRequest);
    // 300 + 40 from the unusable answer, 100 + 50 from the scripted model's repaired one.
    expect(report.usage.manager).toMatchObject({ inputTokens: 400, outputTokens: 90 });
  });

  it("repairs output that is not JSON", async () => {
    const model = createScriptedModel({
      responses: [{ text: "Here is the plan: step 1..." }, { object: { subTasks: [task("a")] } }],
    });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    await createManager({ cwd: process.cwd(), model, executor }).run(longRequest);
    expect(model.calls[1]?.messages.at(-1)?.content).toContain("not valid JSON");
  });

  it("fails with a typed error when the repair is still invalid, and runs nothing", async () => {
    const cyclic = { subTasks: [task("a", ["b"]), task("b", ["a"])] };
    const model = createScriptedModel({ responses: [{ object: cyclic }, { object: cyclic }] });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const store = new MemoryRunStore();
    const run = createManager({ cwd: process.cwd(), model, executor, store }).start(longRequest);
    const failures: string[] = [];
    run.on("run-failed", (e) => failures.push(e.error.code));
    const error = await run.result.catch((e: unknown) => e);
    expect(failures).toEqual(["invalid-plan"]);
    expect((await store.read(run.runId)).map((r) => r.type)).toEqual(["run-started", "run-failed"]);
    expect(PlanValidationError.isInstance(error)).toBe(true);
    expect((error as PlanValidationError).issues[0]).toMatchObject({ kind: "cycle" });
    expect((error as Error).message).toContain("after one repair");
    expect(executor.calls).toHaveLength(0);
    expect(model.remaining).toBe(0);
    const iterated = (async () => {
      for await (const _ of run) {
        /* a late iterator ends with the run's error */
      }
    })();
    await expect(iterated).rejects.toSatisfy(PlanValidationError.isInstance);
  });

  it("does not repair a provider error", async () => {
    const model = createScriptedModel({
      responses: [{ error: new ModelError({ message: "401", provider: "p", statusCode: 401 }) }],
    });
    const executor = createFakeExecutor();
    const error = await createManager({ cwd: process.cwd(), model, executor })
      .run(longRequest)
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(model.calls).toHaveLength(1);
  });

  it("fails with a ModelError naming a host model whose generate resolves to null", async () => {
    const model = { provider: "host", modelId: "broken", generate: async () => null as never };
    const error = await createManager({ cwd: process.cwd(), model, executor: createFakeExecutor() })
      .run(longRequest)
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain("host/broken: generate() resolved to null");
  });

  it("skips decomposition for a trivial request", async () => {
    const model = createScriptedModel(); // any call would throw UnexpectedCallError
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({ cwd: process.cwd(), model, executor }).run(
      "Fix the typo in README.md",
    );
    expect(report.status).toBe("completed");
    expect(model.calls).toHaveLength(0);
    expect(executor.calls[0]?.prompt).toContain("Fix the typo in README.md");
  });

  it("plans a multi-step request even when it is short", async () => {
    const model = createScriptedModel({ responses: [{ object: { subTasks: [task("a")] } }] });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    await createManager({ cwd: process.cwd(), model, executor }).run("Write a.txt and then b.txt");
    expect(model.calls).toHaveLength(1);
  });

  it("rejects an empty or oversized request synchronously with a typed error", () => {
    const manager = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor(),
      maxRequestChars: 10,
    });
    expect(() => manager.start("   ")).toThrowError(InvalidRequestError);
    expect(() => manager.start("x".repeat(11))).toThrowError(/limit is 10/);
  });

  it("rejects bad options with a typed error", () => {
    expect(() =>
      createManager({ cwd: process.cwd(), executor: createFakeExecutor(), concurrency: 0 }),
    ).toThrowError(InvalidConfigError);
    // @ts-expect-error the executor is required
    expect(() => createManager({ cwd: process.cwd() })).toThrowError(/executor/);
  });
});

describe("the report", () => {
  it("has a version, and a cancel's own words in its reason", async () => {
    const controller = new AbortController();
    const executor = createFakeExecutor({ fallback: { type: "hang" } });
    const run = createManager({ cwd: process.cwd(), executor }).start("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: controller.signal,
    });
    run.on("sub-task-started", () => controller.abort("the user closed the window"));
    const report = await run.result;
    expect(report.version).toBe(1);
    expect(report.status).toBe("cancelled");
    expect(report.reason).toBe("Stopped: the run was cancelled: the user closed the window.");
  });
});

describe("declared checks", () => {
  it("core's default evaluator runs none, so a plan declaring them is refused before any attempt; a given evaluator takes them", async () => {
    const checked = {
      subTasks: [{ ...task("a"), checks: [{ type: "file-exists" as const, path: "a.txt" }] }],
    };
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const refused = await createManager({ cwd: process.cwd(), executor })
      .run("x", { plan: checked })
      .catch((e: unknown) => e);
    expect(InvalidConfigError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toContain("sub-task(s) a");
    expect((refused as Error).message).toContain("createEvaluator");
    expect(executor.calls).toHaveLength(0);

    const seen: number[] = [];
    const evaluator: Evaluator = {
      async evaluate(input) {
        seen.push(input.subTask.checks.length);
        return passedEntry();
      },
    };
    const report = await createManager({ cwd: process.cwd(), executor, evaluator }).run("x", {
      plan: checked,
    });
    expect(report.status).toBe("completed");
    expect(seen).toEqual([1]);
  });
});

describe("dispatch", () => {
  it("runs a diamond: B and C together, D only after both", async () => {
    const executor = createFakeExecutor({
      script: {
        a: [{ type: "success", delayMs: 5 }],
        b: [{ type: "success", delayMs: 40 }],
        c: [{ type: "success", delayMs: 40 }],
        d: [{ type: "success", delayMs: 5 }],
      },
    });
    const report = await createManager({ cwd: process.cwd(), executor, concurrency: 4 }).run("x", {
      plan: diamond,
    });
    expect(report.status).toBe("completed");
    const call = (id: string) => executor.calls.find((c) => c.subTaskId === id)!;
    const [a, b, c, d] = [call("a"), call("b"), call("c"), call("d")];
    // B and C overlap: each started before the other ended.
    expect(b.startTick).toBeLessThan(c.endTick!);
    expect(c.startTick).toBeLessThan(b.endTick!);
    expect(executor.maxConcurrent).toBe(2);
    expect(b.startTick).toBeGreaterThan(a.endTick!);
    expect(d.startTick).toBeGreaterThan(Math.max(b.endTick!, c.endTick!));
  });

  it("never runs more than `concurrency` at once", async () => {
    const plan = { subTasks: Array.from({ length: 8 }, (_, i) => task(`t${i}`)) };
    const executor = createFakeExecutor({ fallback: { type: "success", delayMs: 10 } });
    await createManager({ cwd: process.cwd(), executor, concurrency: 3 }).run("x", { plan });
    expect(executor.maxConcurrent).toBe(3);
    expect(executor.calls).toHaveLength(8);
  });

  it("a failed sub-task skips exactly its dependents while independent branches go on", async () => {
    // a -> b -> c, a -> d, e (independent). b fails for good.
    const plan = {
      subTasks: [task("a"), task("b", ["a"]), task("c", ["b"]), task("d", ["a"]), task("e")],
    };
    const executor = createFakeExecutor({
      script: { b: [{ type: "error" }, { type: "error" }, { type: "error" }] },
      fallback: { type: "success" },
    });
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), executor }).run("x", {
      plan,
      onEvent: (e) => events.push(e),
    });
    const status = Object.fromEntries(report.subTasks.map((s) => [s.id, s.status]));
    expect(status).toEqual({
      a: "completed",
      b: "failed",
      c: "skipped",
      d: "completed",
      e: "completed",
    });
    expect(report.status).toBe("partial");
    expect(report.subTasks.find((s) => s.id === "b")?.attempts).toBe(3);
    expect(events.filter((e) => e.type === "sub-task-skipped")).toEqual([
      expect.objectContaining({ subTaskId: "c", blockedBy: ["b"] }),
    ]);
    expect(executor.calls.some((c) => c.subTaskId === "c")).toBe(false);
  });

  it("reports failed when nothing completed", async () => {
    const executor = createFakeExecutor({ fallback: { type: "error" } });
    const report = await createManager({ cwd: process.cwd(), executor, maxRetries: 0 }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(report.status).toBe("failed");
    expect(report.reason).toContain("a (failed)");
  });

  it("turns an executor crash into a failed attempt, not a crashed run", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "crash", message: "spawn ENOENT" }, { type: "success" }] },
    });
    const report = await createManager({ cwd: process.cwd(), executor }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(report.status).toBe("completed");
    expect(executor.calls[1]?.prompt).toContain("spawn ENOENT");
  });

  it("turns an evaluator crash into an incomplete entry that says why", async () => {
    const evaluator: Evaluator = {
      evaluate: async () => {
        throw new Error("judge unavailable");
      },
    };
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      evaluator,
      maxRetries: 1,
    }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(report.status).toBe("failed");
    expect(report.subTasks[0]?.reason).toContain("judge unavailable");
    expect(executor.calls).toHaveLength(2);
  });
});

describe("retries", () => {
  it("retries an incomplete attempt with the evaluator's feedback in the prompt", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "truncated" }, { type: "success", text: "wrote a.txt" }] },
    });
    const feedback = "Create a.txt; the previous attempt only listed the directory.";
    let calls = 0;
    const evaluator: Evaluator = {
      async evaluate({ result }) {
        calls++;
        const completed = result.outcome === "finished";
        return {
          completed,
          summary: completed ? "a.txt written" : "nothing written",
          outputData: completed ? "a.txt holds the answer" : "",
          feedback: completed ? "" : feedback,
          evidence: [{ source: "test", passed: completed, detail: "a.txt missing" }],
          usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
        };
      },
    };
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), executor, evaluator }).run("x", {
      plan: { subTasks: [task("a")] },
      onEvent: (e) => events.push(e),
    });
    expect(calls).toBe(2);
    expect(executor.calls[0]?.prompt).not.toContain("Previous attempt");
    const retryPrompt = executor.calls[1]!.prompt;
    expect(retryPrompt).toContain("Previous attempt (attempt 1 was not complete)");
    expect(retryPrompt).toContain(feedback);
    expect(retryPrompt).toContain("test: a.txt missing");
    expect(report.subTasks[0]).toMatchObject({
      status: "completed",
      attempts: 2,
      outputData: "a.txt holds the answer",
    });
    expect(events.find((e) => e.type === "sub-task-retrying")).toMatchObject({
      subTaskId: "a",
      attempt: 2,
      feedback,
    });
    expect(report.usage.manager.inputTokens).toBe(20);
  });

  it("judges no attempt that ended in an infrastructure error, and tells the next attempt why", async () => {
    let calls = 0;
    const executor = createFakeExecutor({
      script: {
        a: [
          { type: "error", error: "the worker was lost" },
          { type: "crash", message: "Redis went away" },
          { type: "success" },
        ],
      },
    });
    // The first attempt's error is the executor's, not the agent's.
    const run = executor.run.bind(executor);
    executor.run = async (prompt, options) => {
      const result = await run(prompt, options);
      return options.attempt === 1 ? { ...result, infrastructureError: true } : result;
    };
    const evaluator: Evaluator = {
      async evaluate({ attempt }) {
        calls++;
        return {
          completed: true,
          summary: `attempt ${attempt} judged`,
          outputData: "",
          feedback: "",
          evidence: [],
          usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
        };
      },
    };
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), executor, evaluator }).run("x", {
      plan: { subTasks: [task("a")] },
      onEvent: (e) => events.push(e),
    });
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 3 });
    expect(calls).toBe(1);
    const entries = events.flatMap((e) => (e.type === "sub-task-evaluated" ? [e.entry] : []));
    expect(entries.map((entry) => entry.incomplete)).toEqual([
      "interrupted",
      "interrupted",
      undefined,
    ]);
    expect(executor.calls[1]?.prompt).toContain(
      "through no fault of the agent: the worker was lost",
    );
    expect(executor.calls[2]?.prompt).toContain("Redis went away");
  });

  it("does not retry blindly an attempt that repeated the previous one", async () => {
    const executor = createFakeExecutor({ fallback: { type: "truncated" } });
    const seen: string[] = [];
    const evaluator: Evaluator = {
      async evaluate({ attempt, runId }) {
        seen.push(runId);
        return {
          completed: false,
          summary: "cut off",
          outputData: "",
          feedback: "Write smaller files.",
          evidence: [
            { source: "llm-judge", passed: false, detail: "JUDGE-DETAIL" },
            ...(attempt > 1
              ? [{ source: "stuck", passed: false, detail: "same as attempt 1" }]
              : []),
          ],
          usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        };
      },
    };
    const run = createManager({ cwd: process.cwd(), executor, evaluator, maxRetries: 5 }).start(
      "x",
      {
        plan: { subTasks: [task("a")] },
      },
    );
    const report = await run.result;
    expect(executor.calls).toHaveLength(2);
    expect(report.subTasks[0]).toMatchObject({ status: "failed", attempts: 2 });
    expect(report.subTasks[0]?.reason).toContain(
      "No progress: attempt 2 repeated the previous one",
    );
    expect(seen).toEqual([run.runId, run.runId]);
    // The judge's verdict is in the feedback already; the retry prompt does not repeat it.
    expect(executor.calls[1]?.prompt).toContain("Write smaller files.");
    expect(executor.calls[1]?.prompt).not.toContain("JUDGE-DETAIL");
  });

  it("gives up after maxRetries", async () => {
    const executor = createFakeExecutor({ fallback: { type: "truncated" } });
    const report = await createManager({ cwd: process.cwd(), executor, maxRetries: 1 }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(executor.calls).toHaveLength(2);
    expect(report.subTasks[0]).toMatchObject({ status: "failed", attempts: 2 });
    expect(report.subTasks[0]?.reason).toContain("cut off");
  });
});

describe("context passing", () => {
  it("passes dependencies' output into the dependent prompt, cut to the budget", async () => {
    const huge = `START-${"y".repeat(200_000)}-END`;
    const executor = createFakeExecutor({
      script: {
        a: [{ type: "success", text: "OUTPUT-OF-A: the schema is in schema.sql" }],
        b: [{ type: "success", text: huge }],
        c: [{ type: "success" }],
      },
    });
    const plan = { subTasks: [task("a"), task("b"), task("c", ["a", "b"])] };
    await createManager({
      cwd: process.cwd(),
      executor,
      concurrency: 1,
      contextTokenBudget: 1000,
    }).run("x", { plan });
    const prompt = executor.calls.find((c) => c.subTaskId === "c")!.prompt;
    expect(prompt).toContain("Results of earlier sub-tasks");
    expect(prompt).toContain("OUTPUT-OF-A: the schema is in schema.sql");
    expect(prompt).toContain("START-");
    expect(prompt).not.toContain("-END");
    // The dependency section stays near its budget (4 characters a token) whatever the outputs.
    const section = prompt.slice(prompt.indexOf("## Results of earlier sub-tasks"));
    expect(section.length).toBeLessThan(1000 * 4 + 400);
    // Newest first: b completed after a, so its section comes first.
    expect(prompt.indexOf("### b:")).toBeLessThan(prompt.indexOf("### a:"));
  });

  it("does not pass output to sub-tasks that do not depend on it", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "success", text: "SECRET-A" }], b: [{ type: "success" }] },
    });
    await createManager({ cwd: process.cwd(), executor, concurrency: 1 }).run("x", {
      plan: { subTasks: [task("a"), task("b")] },
    });
    expect(executor.calls.find((c) => c.subTaskId === "b")!.prompt).not.toContain("SECRET-A");
  });
});

describe("cancellation and budgets", () => {
  it("aborting mid-run stops dispatch, aborts running attempts and reports cancelled", async () => {
    const plan = { subTasks: [task("a"), task("b", ["a"]), task("c")] };
    const executor = createFakeExecutor({
      script: {
        a: [{ type: "success", delayMs: 5 }],
        b: [{ type: "hang" }],
        c: [{ type: "hang" }],
      },
    });
    const controller = new AbortController();
    const run = createManager({ cwd: process.cwd(), executor, concurrency: 2 }).start("x", {
      plan,
      abortSignal: controller.signal,
    });
    run.on("sub-task-started", (e) => {
      if (e.subTaskId === "b") setTimeout(() => controller.abort(), 5);
    });
    const report = await run.result;
    expect(report.status).toBe("cancelled");
    const status = Object.fromEntries(report.subTasks.map((s) => [s.id, s.status]));
    expect(status).toEqual({ a: "completed", b: "cancelled", c: "cancelled" });
    expect(executor.active).toBe(0);
    expect(executor.calls.every((c) => c.endTick !== undefined)).toBe(true);
  });

  it("an abort before start reports cancelled without running anything", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({ cwd: process.cwd(), executor }).run("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: AbortSignal.abort(),
    });
    expect(report.status).toBe("cancelled");
    expect(executor.calls).toHaveLength(0);
  });

  it("cancelling during planning reports cancelled", async () => {
    const model = createScriptedModel({ responses: [{ object: diamond, delayMs: 10_000 }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor(),
    }).run(longRequest, {
      abortSignal: controller.signal,
    });
    expect(report.status).toBe("cancelled");
    expect(report.subTasks).toEqual([]);
  });

  it("stops starting new work when the token budget is reached, and says why", async () => {
    const plan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] };
    const executor = createFakeExecutor({
      fallback: { type: "success", usage: { inputTokens: 600, outputTokens: 100 } },
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      budget: { maxTokens: 1000 },
    }).run("x", {
      plan,
      onEvent: (e) => events.push(e),
    });
    // a uses 700, b brings it to 1400 >= 1000: c never starts.
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a", "b"]);
    expect(report.status).toBe("partial");
    expect(report.reason).toContain("token budget of 1000");
    expect(report.subTasks.find((s) => s.id === "c")).toMatchObject({ status: "skipped" });
    expect(events.filter((e) => e.type === "budget-exhausted")).toEqual([
      expect.objectContaining({ kind: "tokens", limit: 1000, used: 1400 }),
    ]);
    expect(report.usage.agents.inputTokens).toBe(1200);
  });

  it("stops starting new work when the money budget is reached, and says why", async () => {
    const plan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] };
    const executor = createFakeExecutor({
      fallback: { type: "success", usage: { inputTokens: 600, outputTokens: 100, costUsd: 0.75 } },
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      budget: { maxCostUsd: 1 },
    }).run("x", {
      plan,
      onEvent: (e) => events.push(e),
    });
    // a spends $0.75, b brings it to $1.50 >= $1: c never starts.
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a", "b"]);
    expect(report.status).toBe("partial");
    expect(report.reason).toBe("Stopped: the cost budget of $1 was reached ($1.5000 spent).");
    expect(events.filter((e) => e.type === "budget-exhausted")).toEqual([
      expect.objectContaining({ kind: "cost", limit: 1, used: 1.5 }),
    ]);
    expect(report.usage.agents.costUsd).toBe(1.5);
    expect(report.subTasks.find((s) => s.id === "a")?.usage?.attempts).toEqual([
      expect.objectContaining({ attempt: 1, agent: expect.objectContaining({ costUsd: 0.75 }) }),
    ]);
  });

  it("the time budget stops running attempts and reports why", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "success" }], b: [{ type: "hang" }] },
    });
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      budget: { maxDurationMs: 50 },
    }).run("x", {
      plan: { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] },
    });
    expect(report.status).toBe("partial");
    expect(report.reason).toContain("time budget of 50 ms");
    const status = Object.fromEntries(report.subTasks.map((s) => [s.id, s.status]));
    expect(status).toEqual({ a: "completed", b: "cancelled", c: "skipped" });
  });
});

describe("events", () => {
  it("announces every step in order, the same to listeners and to the async iterable", async () => {
    const plan = { subTasks: [task("a"), task("b", ["a"])] };
    const executor = createFakeExecutor({
      script: { a: [{ type: "truncated" }, { type: "success" }], b: [{ type: "success" }] },
    });
    const run = createManager({ cwd: process.cwd(), executor }).start("x", { plan });
    const heard: RunEvent[] = [];
    run.on("*", (e) => heard.push(e));
    const completed: string[] = [];
    run.on("sub-task-completed", (e) => completed.push(e.subTaskId));
    const iterated: RunEvent[] = [];
    for await (const event of run) iterated.push(event);
    const report = await run.result;

    expect(iterated).toEqual(heard);
    expect(completed).toEqual(["a", "b"]);
    expect(heard.map((e) => e.seq)).toEqual(heard.map((_, i) => i));
    const steps = heard
      .filter((e) => e.type !== "agent-event")
      .map((e) => ("subTaskId" in e ? `${e.type}:${e.subTaskId}` : e.type));
    expect(steps).toEqual([
      "run-started",
      "plan-created",
      "sub-task-started:a",
      "attempt-finished:a",
      "sub-task-evaluated:a",
      "sub-task-retrying:a",
      "sub-task-started:a",
      "attempt-finished:a",
      "sub-task-evaluated:a",
      "sub-task-completed:a",
      "sub-task-started:b",
      "attempt-finished:b",
      "sub-task-evaluated:b",
      "sub-task-completed:b",
      "run-finished",
    ]);
    expect(heard.at(-1)).toMatchObject({ type: "run-finished", report });
    expect(heard.some((e) => e.type === "agent-event" && e.event.type === "step-finish")).toBe(
      true,
    );
    expect(new Set(heard.map((e) => e.runId))).toEqual(new Set([run.runId]));
  });

  it("stores each state change before announcing it, and no agent-event chatter", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const run = createManager({ cwd: process.cwd(), executor, store }).start("x", {
      plan: { subTasks: [task("a")] },
    });
    const storedWhenHeard: boolean[] = [];
    run.on("*", (event) => {
      if (event.type === "agent-event") return;
      void store
        .read(run.runId)
        .then((records) => storedWhenHeard.push(records.some((r) => r.seq === event.seq)));
    });
    await run.result;
    await new Promise((resolve) => setImmediate(resolve));
    expect(storedWhenHeard.length).toBeGreaterThan(5);
    expect(storedWhenHeard.every(Boolean)).toBe(true);
    const records = await store.read(run.runId);
    expect(records.some((r) => r.type === "agent-event")).toBe(false);
    expect(records.at(-1)?.type).toBe("run-finished");
  });

  it("a store that fails ends the run with a StoreError instead of losing state", async () => {
    const store = {
      append: async (_: string, record: RunEvent) => {
        if (record.type === "sub-task-started") throw new Error("disk full");
      },
      read: async () => [],
    };
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const run = createManager({ cwd: process.cwd(), executor, store }).start("x", {
      plan: { subTasks: [task("a"), task("b")] },
    });
    const iterated = (async () => {
      for await (const _ of run) {
        /* drain */
      }
    })();
    const error = await run.result.catch((e: unknown) => e);
    expect(StoreError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain("disk full");
    await expect(iterated).rejects.toSatisfy(StoreError.isInstance);
  });

  it("a listener that throws does not break the run", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const run = createManager({ cwd: process.cwd(), executor }).start("x", {
      plan: { subTasks: [task("a")] },
    });
    run.on("sub-task-started", () => {
      throw new Error("listener bug");
    });
    const warned = new Promise<Error>((resolve) => process.once("warning", resolve));
    expect((await run.result).status).toBe("completed");
    expect((await warned).message).toContain("listener bug");
  });

  it("fake executor calls beyond the script surface as failed attempts", async () => {
    const executor = createFakeExecutor({ script: { a: [{ type: "truncated" }] } });
    const report = await createManager({ cwd: process.cwd(), executor, maxRetries: 1 }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(report.status).toBe("failed");
    expect(report.subTasks[0]?.reason).toContain(new UnexpectedCallError("").code);
  });
});
