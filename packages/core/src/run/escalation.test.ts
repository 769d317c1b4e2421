import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { ExecutorError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { Evaluator } from "../ports/evaluator.js";
import { task } from "../test-support/sub-task-fixture.js";
import { createManager } from "./manager.js";

const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };

describe("escalation ladder", () => {
  it("replaces a sub-task that keeps failing, and its dependent, without re-running completed work", async () => {
    // a done; b fails every time; c depends on b; d is an independent sibling.
    const plan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"]), task("d")] };
    const model = createScriptedModel({
      responses: [
        { object: { subTasks: [task("b1", ["a"]), task("b2", ["b1"]), task("c1", ["b2"])] } },
      ],
    });
    const executor = createFakeExecutor({
      script: { b: [{ type: "error" }, { type: "error" }] },
      fallback: { type: "success" },
    });
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), model, executor, maxRetries: 1 }).run(
      "x",
      {
        plan,
        onEvent: (e) => events.push(e),
      },
    );
    const status = Object.fromEntries(report.subTasks.map((s) => [s.id, s.status]));
    expect(status).toEqual({
      a: "completed",
      b: "replaced",
      c: "replaced",
      d: "completed",
      b1: "completed",
      b2: "completed",
      c1: "completed",
    });
    expect(report.status).toBe("completed");
    expect(report.subTasks.find((s) => s.id === "b")).toMatchObject({
      replacedBy: ["b1", "b2", "c1"],
    });
    expect(report.subTasks.find((s) => s.id === "b")?.reason).toContain(
      "Replanned after 2 attempt(s) of b",
    );
    const runs = executor.calls.map((c) => c.subTaskId);
    expect(runs.filter((id) => id === "a")).toHaveLength(1);
    expect(runs.filter((id) => id === "d")).toHaveLength(1);
    expect(runs).not.toContain("c");
    // The replan call saw what is kept and what failed.
    const prompt = model.calls[0]!.messages[0]!.content;
    expect(model.calls[0]?.output?.name).toBe("task_ledger");
    expect(prompt).toContain("- a [completed]");
    expect(prompt).toContain("Failed after 2 attempt(s): b");
    expect(prompt).toMatch(/To replace[\s\S]*- b:[\s\S]*- c:/);
    expect(events.find((e) => e.type === "sub-task-escalated")).toMatchObject({
      subTaskId: "b",
      step: "replan",
    });
    expect(events.find((e) => e.type === "plan-revised")).toMatchObject({
      replaced: ["b", "c"],
      added: ["b1", "b2", "c1"],
    });
  });

  it("repairs a replan that reuses an id, and holds the caps per sub-task and per run", async () => {
    const model = createScriptedModel({
      responses: [
        { object: { subTasks: [task("a")] } }, // reuses a used id: repaired
        { object: { subTasks: [task("a2")] } },
      ],
    });
    // a fails, its replacement a2 fails too: maxPerSubTask 1 stops a second replan.
    const executor = createFakeExecutor({ fallback: { type: "error" } });
    const report = await createManager({ cwd: process.cwd(), model, executor, maxRetries: 0 }).run(
      "x",
      {
        plan: { subTasks: [task("a")] },
      },
    );
    expect(model.calls).toHaveLength(2);
    expect(model.calls[1]?.messages.at(-1)?.content).toContain('"a" is already used in this run');
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
      ["a", "replaced"],
      ["a2", "failed"],
    ]);
    expect(report.status).toBe("failed");
    expect(model.remaining).toBe(0);

    const perRun = createScriptedModel({ responses: [{ object: { subTasks: [task("x1")] } }] });
    const report2 = await createManager({
      cwd: process.cwd(),
      model: perRun,
      executor: createFakeExecutor({ fallback: { type: "error" } }),
      maxRetries: 0,
      replan: { maxPerRun: 1, maxPerSubTask: 5 },
    }).run("x", { plan: { subTasks: [task("x"), task("y")] } });
    // One replan in the run (for x or y, whichever failed first); nothing more was asked.
    expect(perRun.calls).toHaveLength(1);
    expect(report2.subTasks.filter((s) => s.status === "replaced")).toHaveLength(1);
  });

  it("a stuck agent skips the remaining retries and goes straight to the next step", async () => {
    const executor = createFakeExecutor({ fallback: { type: "truncated" } });
    const evaluator: Evaluator = {
      async evaluate({ attempt }) {
        return {
          completed: false,
          summary: "same as before",
          outputData: "",
          feedback: "Try another way.",
          evidence: attempt > 1 ? [{ source: "stuck", passed: false, detail: "identical" }] : [],
          usage,
        };
      },
    };
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      evaluator,
      maxRetries: 5,
      alternateAgentModels: ["other/model"],
    }).run("x", {
      plan: { subTasks: [task("a")] },
      onEvent: (e) => events.push(e),
    });
    // Attempt 2 repeats attempt 1: no attempts 3–6 on the same model; one on the alternate; then stuck again.
    expect(executor.calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(
      events
        .filter((e) => e.type === "sub-task-escalated")
        .map((e) => (e as { step: string }).step),
    ).toEqual(["alternate-model"]);
    expect(report.subTasks[0]?.reason).toContain(
      "No progress: attempt 3 repeated the previous one",
    );
  });

  it("tries each alternate agent model once, passing it to the executor", async () => {
    const seen: (string | undefined)[] = [];
    const executor = createFakeExecutor({
      script: ({ attempt }) => (attempt < 4 ? { type: "error" } : { type: "success" }),
    });
    const run = executor.run.bind(executor);
    executor.run = (prompt, options) => {
      seen.push(options.agentModel);
      return run(prompt, options);
    };
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      maxRetries: 1,
      alternateAgentModels: ["p/one", "p/two"],
    }).run("x", {
      plan: { subTasks: [task("a")] },
      onEvent: (e) => events.push(e),
    });
    expect(seen).toEqual([undefined, undefined, "p/one", "p/two"]);
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 4 });
    const started = events
      .filter((e) => e.type === "sub-task-started")
      .map((e) => (e as { agentModel?: string }).agentModel);
    expect(started).toEqual([undefined, undefined, "p/one", "p/two"]);
  });

  it("does not retry or escalate an executor that cannot run at all, nor blame a judge outage on the plan; each says why as a code", async () => {
    const model = createScriptedModel(); // a replan call would throw
    const broken = createFakeExecutor();
    broken.run = async () => {
      throw new ExecutorError("opencode binary not found; run npm install opencode-ai", {
        isRetryable: false,
      });
    };
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: broken,
      maxRetries: 3,
      alternateAgentModels: ["p/m"],
    }).run("x", {
      plan: { subTasks: [task("a")] },
      onEvent: (e) => events.push(e),
    });
    expect(report.subTasks[0]).toMatchObject({
      status: "failed",
      attempts: 1,
      failure: "executor-unavailable",
    });
    expect(events.find((e) => e.type === "sub-task-failed")).toMatchObject({
      code: "executor-unavailable",
    });
    expect(report.subTasks[0]?.reason).toContain(
      "The executor cannot run attempts: opencode binary not found",
    );

    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const judgeDown: Evaluator = {
      async evaluate() {
        return {
          completed: false,
          summary: "unproven",
          outputData: "",
          feedback: "The attempt could not be judged (timed out).",
          evidence: [{ source: "llm-judge-unavailable", passed: false, detail: "timed out" }],
          usage,
        };
      },
    };
    const judged = await createManager({
      cwd: process.cwd(),
      model,
      executor,
      evaluator: judgeDown,
      maxRetries: 1,
      alternateAgentModels: ["p/m"],
    }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(executor.calls).toHaveLength(2);
    expect(model.calls).toHaveLength(0);
    expect(judged.subTasks[0]?.reason).toContain("could not be judged (timed out)");
    expect(judged.subTasks[0]?.failure).toBe("judge-unavailable");
  });
});
