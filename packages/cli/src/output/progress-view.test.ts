import type { RunEvent } from "@taskledger/core";
import pc from "picocolors";
import { describe, expect, it } from "vitest";
import { eventLines } from "./event-lines.js";
import { applyEvent, createProgressState } from "./progress-state.js";
import { liveFrame } from "./reporter.js";

const c = pc.createColors(false);
const base = { runId: "r", time: "t" };
const ledger = {
  subTasks: [
    {
      id: "a",
      title: "Write A",
      description: "d",
      successCriteria: ["c"],
      dependsOn: [],
      checks: [],
    },
    {
      id: "b",
      title: "Write B",
      description: "d",
      successCriteria: ["c"],
      dependsOn: ["a"],
      checks: [],
    },
  ],
};
const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };

describe("progress view", () => {
  it("shows a queued attempt as waiting for a worker until a worker takes it", () => {
    const state = createProgressState();
    const status = (seq: number, value: "waiting-for-worker" | "running"): RunEvent => ({
      ...base,
      seq,
      type: "agent-event",
      subTaskId: "a",
      attempt: 1,
      event: { type: "executor-status", status: value },
    });
    applyEvent(
      state,
      { ...base, seq: 0, type: "plan-created", ledger, decomposed: true, repaired: false, usage },
      0,
    );
    applyEvent(
      state,
      { ...base, seq: 1, type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9 },
      0,
    );
    applyEvent(state, status(2, "waiting-for-worker"), 0);
    expect(liveFrame(state, "⠋", 3000, c)).toBe(
      "⠋ Step 1/2: Write A 3.0s · waiting for a worker\n0/2 done",
    );
    applyEvent(state, status(3, "running"), 0);
    expect(liveFrame(state, "⠋", 3000, c)).toBe("⠋ Step 1/2: Write A 3.0s\n0/2 done");
  });

  it("names every candidate's attempt, the first one's too", () => {
    const state = createProgressState();
    applyEvent(
      state,
      { ...base, seq: 0, type: "plan-created", ledger, decomposed: true, repaired: false, usage },
      0,
    );
    const started = (seq: number, attempt: number): RunEvent => ({
      ...base,
      seq,
      type: "sub-task-started",
      subTaskId: "a",
      attempt,
      promptTokens: 9,
      candidate: { round: 1 },
    });
    const lines = [1, 2].map((n) => eventLines(started(n, n), state, c).join("\n"));
    expect(lines).toEqual([
      "▶ Step 1/2 Write A · attempt 1 · candidate",
      "▶ Step 1/2 Write A · attempt 2 · candidate",
    ]);
  });

  it("says a round the judge chose none of merged nothing, and one with none complete so", () => {
    const state = createProgressState();
    applyEvent(
      state,
      { ...base, seq: 0, type: "plan-created", ledger, decomposed: true, repaired: false, usage },
      0,
    );
    const chosen = (by: "judge" | "none"): RunEvent => ({
      ...base,
      seq: 1,
      type: "candidates-chosen",
      subTaskId: "a",
      round: 1,
      by,
      reason: "Neither adds.",
      candidates: [],
      usage,
    });
    expect(eventLines(chosen("judge"), state, c)).toEqual([
      "⑃ Step 1/2 Write A: none chosen (judge), none merged; Neither adds.",
    ]);
    expect(eventLines(chosen("none"), state, c)).toEqual([
      "⑃ Step 1/2 Write A: no candidate complete; Neither adds.",
    ]);
  });

  it("shows the plan, running steps with elapsed time and activity, retries and results", () => {
    const state = createProgressState();
    const lines: string[] = [];
    const feed = (event: RunEvent, now: number) => {
      applyEvent(state, event, now);
      lines.push(...eventLines(event, state, c));
    };
    expect(liveFrame(state, "⠋", 0, c)).toBe("⠋ Planning…");
    feed(
      { ...base, seq: 0, type: "plan-created", ledger, decomposed: true, repaired: false, usage },
      0,
    );
    expect(lines).toEqual(["Plan: 2 sub-tasks", "  1. Write A [a]", "  2. Write B [b] (after a)"]);
    feed(
      { ...base, seq: 1, type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9 },
      1000,
    );
    feed(
      {
        ...base,
        seq: 2,
        type: "agent-event",
        subTaskId: "a",
        attempt: 1,
        event: {
          type: "tool-use",
          tool: "write",
          status: "completed",
          input: '{"filePath":"a.txt"}',
          output: "",
        },
      },
      1500,
    );
    expect(liveFrame(state, "⠋", 13_500, c)).toBe(
      '⠋ Step 1/2: Write A 12.5s · write {"filePath":"a.txt"}\n0/2 done',
    );
    feed(
      {
        ...base,
        seq: 3,
        type: "sub-task-retrying",
        subTaskId: "a",
        attempt: 2,
        feedback: "Create a.txt; it is missing.",
      },
      14_000,
    );
    expect(lines.at(-1)).toBe(
      "↻ Step 1/2 Write A retrying (attempt 2): Create a.txt; it is missing.",
    );
    feed(
      { ...base, seq: 4, type: "sub-task-started", subTaskId: "a", attempt: 2, promptTokens: 9 },
      14_000,
    );
    expect(liveFrame(state, "⠙", 15_000, c)).toContain("Step 1/2: Write A 1.0s · attempt 2");
    feed(
      {
        ...base,
        seq: 5,
        type: "attempt-finished",
        subTaskId: "a",
        attempt: 2,
        result: {
          outcome: "finished",
          finalText: "ok",
          toolCalls: [],
          stepFinishReasons: ["stop"],
          filesChanged: [],
          usage,
          durationMs: 2500,
        },
      },
      16_500,
    );
    const entry = {
      completed: true,
      summary: "Wrote a.txt",
      outputData: "",
      feedback: "",
      evidence: [],
      usage,
    };
    feed(
      { ...base, seq: 6, type: "sub-task-completed", subTaskId: "a", attempts: 2, entry },
      16_500,
    );
    expect(lines.at(-1)).toBe("✔ Step 1/2 Write A in 2.5s: Wrote a.txt");
    feed(
      {
        ...base,
        seq: 7,
        type: "sub-task-skipped",
        subTaskId: "b",
        reason: "Depends on a.",
        blockedBy: ["a"],
      },
      17_000,
    );
    expect(lines.at(-1)).toBe("– Step 2/2 Write B skipped: Depends on a.");
    expect(liveFrame(state, "⠋", 17_000, c)).toBe("1/2 done");
    expect(state.byId.get("a")?.usage.inputTokens).toBe(10);
  });
});
