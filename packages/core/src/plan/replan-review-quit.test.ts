import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createManager } from "../run/manager.js";
import { FileRunStore } from "../store/file-run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import type { PlanReview } from "./plan-review.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "taskledger-replan-quit-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a replan review pending when the host quits", () => {
  it("leaves the sub-task resumable: resume asks the same question again and the run completes", async () => {
    const replan = { subTasks: [task("a2")] };
    const quit = new AbortController();
    // The Electron bridge's dispose(): every run's signal aborts while a person is deciding.
    const first = createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: replan }] }),
      executor: createFakeExecutor({ script: { a: [{ type: "error" }] } }),
      store: new FileRunStore(dir),
      createRunId: () => "run-q",
      maxRetries: 0,
      reviewPlan: (review) =>
        review.kind === "plan"
          ? { action: "approve" }
          : new Promise((_, reject) =>
              review.abortSignal?.addEventListener("abort", () =>
                reject(review.abortSignal?.reason),
              ),
            ),
    }).start("Do a.", { plan: { subTasks: [task("a")] }, abortSignal: quit.signal });
    first.on("plan-review-requested", (e) => {
      if (e.kind === "replan") quit.abort();
    });
    const stopped = await first.result;
    expect(stopped.status).toBe("cancelled");
    expect(stopped.subTasks.map((s) => [s.id, s.status])).toEqual([["a", "cancelled"]]);

    const model = createScriptedModel(); // the proposed replan is in the log: no model call
    const reviews: PlanReview[] = [];
    const executor = createFakeExecutor({ fallback: { type: "success", text: "done a2" } });
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor,
      store: new FileRunStore(dir),
      reviewPlan: (review) => {
        reviews.push(review);
        return { action: "approve" };
      },
    }).resume("run-q").result;
    expect(reviews.map((r) => [r.kind, r.replaced, r.ledger.subTasks.map((s) => s.id)])).toEqual([
      ["replan", ["a"], ["a2"]],
    ]);
    expect(model.calls).toHaveLength(0);
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a2"]);
    expect(report.status).toBe("completed");
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
      ["a", "replaced"],
      ["a2", "completed"],
    ]);
  });
});
