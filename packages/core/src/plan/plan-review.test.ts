import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { PlanReviewError, PlanValidationError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import { createManager } from "../run/manager.js";
import { MemoryRunStore } from "../store/run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import type { PlanReview, PlanReviewDecision } from "./plan-review.js";

const plan = { subTasks: [task("a"), task("b", ["a"]), task("c")] };
const request = "Do a, then b, and also c.";

describe("reviewPlan", () => {
  it("runs the plan as edited: one removed, one added with a dependency, criteria changed", async () => {
    const reviews: PlanReview[] = [];
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: plan }] }),
      executor,
      reviewPlan: (review) => {
        reviews.push(review);
        const [a, b] = review.ledger.subTasks;
        return {
          action: "edit",
          ledger: {
            subTasks: [{ ...a!, successCriteria: ["a.txt holds 42"] }, b!, task("d", ["b"])],
          },
        };
      },
    }).run(request);
    expect(reviews.map((r) => [r.kind, r.ledger.subTasks.length])).toEqual([["plan", 3]]);
    expect(report.subTasks.map((s) => s.id)).toEqual(["a", "b", "d"]);
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a", "b", "d"]);
    expect(executor.calls[0]?.prompt).toContain("- a.txt holds 42");
  });

  it("an invalid edit is asked about again with its errors; the corrected edit runs", async () => {
    const reviews: PlanReview[] = [];
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: (review) => {
        reviews.push(review);
        const dependsOn = reviews.length === 1 ? ["ghost"] : [];
        return { action: "edit", ledger: { subTasks: [task("a", dependsOn)] } };
      },
    }).run(request, { plan });
    expect(reviews).toHaveLength(2);
    expect(reviews[0]?.problems).toBeUndefined();
    expect(reviews[1]?.problems?.join("\n")).toContain('depends on unknown sub-task "ghost"');
    expect(report.status).toBe("completed");
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a"]);
  });

  it("an edit still invalid after three answers fails the run with a clear error and runs nothing", async () => {
    let asked = 0;
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const run = createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: () => {
        asked++;
        return { action: "edit", ledger: { subTasks: [task("a", ["ghost"])] } };
      },
    }).start(request, { plan });
    const error = await run.result.catch((e: unknown) => e);
    expect(PlanValidationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('depends on unknown sub-task "ghost"');
    expect(asked).toBe(3);
    expect(executor.calls).toHaveLength(0);
  });

  it("an answer that is no decision ({ action: 'maybe' }) never runs the plan: asked again, then PlanReviewError", async () => {
    const problems: (string[] | undefined)[] = [];
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const events: RunEvent[] = [];
    const run = createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: (review) => {
        problems.push(review.problems);
        return { action: "maybe" } as unknown as PlanReviewDecision;
      },
    }).start(request, { plan, onEvent: (e) => events.push(e) });
    const error = await run.result.catch((e: unknown) => e);
    expect(PlanReviewError.isInstance(error)).toBe(true);
    expect((error as PlanReviewError).runId).toBe(run.runId);
    expect(problems).toHaveLength(3);
    expect(problems[1]?.[0]).toContain('got {"action":"maybe"}');
    expect(executor.calls).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({
      type: "run-failed",
      error: { code: "plan-review-failed" },
    });
  });

  it("a hook that throws fails the run with PlanReviewError naming the run, the host's error as cause", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const events: RunEvent[] = [];
    const thrown = new Error("renderer went away");
    const run = createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: () => {
        throw thrown;
      },
    }).start(request, { plan, onEvent: (e) => events.push(e) });
    const error = await run.result.catch((e: unknown) => e);
    expect(PlanReviewError.isInstance(error)).toBe(true);
    expect((error as PlanReviewError).runId).toBe(run.runId);
    expect((error as Error).message).toContain("renderer went away");
    expect((error as Error).cause).toBe(thrown);
    expect(events.at(-1)).toMatchObject({
      type: "run-failed",
      error: { code: "plan-review-failed" },
    });
    expect(executor.calls).toHaveLength(0);
  });

  it("cancelling a run whose review hook never settles ends the wait: cancelled, nothing ran", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const controller = new AbortController();
    const run = createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: () => {
        controller.abort();
        return new Promise<PlanReviewDecision>(() => {});
      },
    }).start(request, { plan, abortSignal: controller.signal });
    const report = await run.result;
    expect(report.status).toBe("cancelled");
    expect(executor.calls).toHaveLength(0);
  });

  it("a rejected plan runs nothing and reports cancelled with the reason", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      reviewPlan: () => ({ action: "reject", reason: "too broad" }),
    }).run(request, { plan });
    expect(report.status).toBe("cancelled");
    expect(report.reason).toContain("too broad");
    expect(executor.calls).toHaveLength(0);
  });

  it("is asked again for a replan, and rejecting it fails the sub-task as before", async () => {
    const kinds: string[] = [];
    const executor = createFakeExecutor({
      script: { b: [{ type: "error" }] },
      fallback: { type: "success" },
    });
    const report = await createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: { subTasks: [task("b1", ["a"])] } }] }),
      executor,
      maxRetries: 0,
      reviewPlan: (review) => {
        kinds.push(review.kind);
        if (review.kind === "replan") expect(review.replaced).toEqual(["b"]);
        return review.kind === "plan" ? { action: "approve" } : { action: "reject" };
      },
    }).run(request, { plan });
    expect(kinds).toEqual(["plan", "replan"]);
    expect(report.subTasks.find((s) => s.id === "b")).toMatchObject({ status: "failed" });
    expect(report.subTasks.find((s) => s.id === "b")?.reason).toContain("rejected in review");
    expect(report.subTasks.some((s) => s.id === "b1")).toBe(false);
  });

  it("a run waiting for review survives a restart: the new process asks again and goes on", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    // The first process shows the plan and is closed before anyone answers.
    const first = createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-r",
      reviewPlan: () => new Promise(() => {}),
    }).start(request, { plan });
    const asked = new Promise<RunEvent>((resolve) => first.on("plan-review-requested", resolve));
    expect((await asked).type).toBe("plan-review-requested");
    const records = await store.read("run-r");
    const restarted = new MemoryRunStore();
    for (const record of records) await restarted.append("run-r", record);

    const later = createFakeExecutor({ fallback: { type: "success" } });
    const reviews: PlanReview[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: later,
      store: restarted,
      reviewPlan: (review) => {
        reviews.push(review);
        return {
          action: "edit",
          ledger: { subTasks: review.ledger.subTasks.filter((s) => s.id !== "c") },
        };
      },
    }).resume("run-r").result;
    expect(reviews.map((r) => r.ledger.subTasks.map((s) => s.id))).toEqual([["a", "b", "c"]]);
    expect(report.status).toBe("completed");
    expect(later.calls.map((c) => c.subTaskId)).toEqual(["a", "b"]);
    expect(executor.calls).toHaveLength(0);
    const log = await restarted.read("run-r");
    expect(log.filter((r) => r.type === "plan-reviewed")).toEqual([
      expect.objectContaining({ kind: "plan", action: "edit" }),
    ]);
  });

  it("a replan waiting for review survives a restart: asked about again, not asked of the model again", async () => {
    const store = new MemoryRunStore();
    const replan = { subTasks: [task("a2")] };
    const failing = {
      script: { a: [{ type: "error" as const }] },
      fallback: { type: "success" as const },
    };
    const first = createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: replan }] }),
      executor: createFakeExecutor(failing),
      store,
      createRunId: () => "run-rr",
      maxRetries: 0,
      // The plan is approved; the replan's question is never answered before the process stops.
      reviewPlan: (review) =>
        review.kind === "plan" ? { action: "approve" } : new Promise(() => {}),
    }).start(request, { plan: { subTasks: [task("a")] } });
    await new Promise<void>((resolve) =>
      first.on("plan-review-requested", (e) => e.kind === "replan" && resolve()),
    );
    const restarted = new MemoryRunStore();
    for (const record of await store.read("run-rr")) await restarted.append("run-rr", record);

    const model = createScriptedModel(); // any call would throw UnexpectedCallError
    const reviews: PlanReview[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      store: restarted,
      reviewPlan: (review) => {
        reviews.push(review);
        return { action: "approve" };
      },
    }).resume("run-rr").result;
    expect(model.calls).toHaveLength(0);
    expect(reviews.map((r) => [r.kind, r.ledger.subTasks.map((s) => s.id)])).toEqual([
      ["replan", ["a2"]],
    ]);
    expect(report.status).toBe("completed");
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
      ["a", "replaced"],
      ["a2", "completed"],
    ]);
    const log = await restarted.read("run-rr");
    expect(log.filter((r) => r.type === "sub-task-escalated")).toHaveLength(1);
  });
});
