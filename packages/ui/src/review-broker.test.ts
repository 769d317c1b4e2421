import type { PlanReview, PlanReviewDecision } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { firstAnswer, ReviewBroker } from "./review-broker.js";

const ledger = {
  subTasks: [
    { id: "a", title: "A", description: "d", successCriteria: ["c"], dependsOn: [], checks: [] },
  ],
};

function review(kind: "plan" | "replan", abortSignal = new AbortController().signal): PlanReview {
  return {
    runId: "r",
    request: "q",
    kind,
    ledger,
    ...(kind === "replan" ? { replaced: ["old"], reason: "it failed" } : {}),
    abortSignal,
  };
}

describe("ReviewBroker", () => {
  it("holds a replan for the page and takes a valid edit; an invalid one is an error to show", async () => {
    const broker = new ReviewBroker(20);
    const changes: (string | undefined)[] = [];
    broker.onChange(() => changes.push(broker.pending?.kind));
    const decision = Promise.resolve(broker.reviewPlan(review("replan")));
    const pending = broker.pending;
    expect(pending).toMatchObject({ kind: "replan", replaced: ["old"], reason: "it failed" });
    const bad = broker.answer({
      id: pending!.id,
      action: "edit",
      ledger: { subTasks: [{ ...ledger.subTasks[0], dependsOn: ["ghost"] }] },
    });
    expect(bad).toMatchObject({ ok: false, status: 400 });
    expect(bad.ok ? "" : bad.error).toContain("ghost");
    expect(broker.pending?.id).toBe(pending!.id);
    expect(broker.answer({ id: pending!.id, action: "edit", ledger })).toEqual({ ok: true });
    expect((await decision).action).toBe("edit");
    expect(broker.pending).toBeUndefined();
    expect(broker.answer({ id: pending!.id, action: "approve" })).toMatchObject({ status: 409 });
    expect(changes).toEqual(["replan", undefined]);
  });

  it("withdraws the page's question when the terminal answers first, and the reverse", async () => {
    const broker = new ReviewBroker(20);
    let answerAtTerminal: (d: PlanReviewDecision) => void = () => {};
    let terminalWithdrawn = false;
    const terminal = (r: PlanReview) =>
      new Promise<PlanReviewDecision>((resolve, reject) => {
        answerAtTerminal = resolve;
        r.abortSignal.addEventListener("abort", () => {
          terminalWithdrawn = true;
          reject(new Error("withdrawn"));
        });
      });
    const ask = firstAnswer(broker.reviewPlan, terminal);

    const byTerminal = Promise.resolve(ask(review("plan")));
    expect(broker.pending?.kind).toBe("plan");
    answerAtTerminal({ action: "reject", reason: "no" });
    expect(await byTerminal).toEqual({ action: "reject", reason: "no" });
    expect(broker.pending).toBeUndefined();

    const byPage = Promise.resolve(ask(review("plan")));
    broker.answer({ id: broker.pending!.id, action: "approve" });
    expect(await byPage).toEqual({ action: "approve" });
    expect(terminalWithdrawn).toBe(true);
  });

  it("gives up the question when the run is cancelled", async () => {
    const broker = new ReviewBroker(20);
    const cancel = new AbortController();
    const decision = Promise.resolve(broker.reviewPlan(review("plan", cancel.signal)));
    cancel.abort();
    await expect(decision).rejects.toMatchObject({ code: "aborted" });
    expect(broker.pending).toBeUndefined();
  });
});
