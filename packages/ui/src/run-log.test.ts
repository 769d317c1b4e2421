import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttemptResult,
  emptyUsage,
  type ProgressEntry,
  type RunEvent,
  runLogVersion,
} from "@taskledger/core";
import { afterEach, describe, expect, it } from "vitest";
import { RunLog } from "./run-log.js";
import { timelineOf } from "./run-views.js";
import { storeGatedRun, storeLimitedRun } from "./test-support/fixture-runs.js";

const base = { runId: "r1", time: "2026-11-25T19:00:00.000Z" };

describe("RunLog", () => {
  it("keeps, on the attempt that made them, the changes left out because they were outside the run's directory", async () => {
    const ledger = {
      subTasks: [
        {
          id: "a",
          title: "A",
          description: "d",
          successCriteria: ["c"],
          dependsOn: [],
          checks: [],
        },
      ],
    };
    const records = [
      { ...base, seq: 0, type: "run-started", request: "x", cwd: "/repo/packages/app" },
      {
        ...base,
        seq: 1,
        type: "plan-created",
        ledger,
        decomposed: false,
        repaired: false,
        usage: emptyUsage(),
      },
      { ...base, seq: 2, type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 1 },
      {
        ...base,
        seq: 3,
        type: "attempt-finished",
        subTaskId: "a",
        attempt: 1,
        result: {
          outcome: "finished",
          finalText: "done",
          toolCalls: [],
          stepFinishReasons: ["stop"],
          filesChanged: ["packages/app/inside.txt"],
          outsideCwd: { paths: ["ROOT_CONFIG.txt"], count: 3 },
          refusals: [
            { kind: "write", target: "/home/u/.bashrc", detail: "openat" },
            { kind: "network", target: "example.com:443" },
          ],
          usage: emptyUsage(),
          durationMs: 1,
        },
      },
    ] as RunEvent[];
    const path = join(await mkdtemp(join(tmpdir(), "taskledger-run-log-")), "r1.jsonl");
    await writeFile(path, records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const log = new RunLog(path, "r1");
    await log.readMore();

    expect(log.error).toBeUndefined();
    const [attempt] = log.attempts.get("a")!;
    expect(attempt).toMatchObject({
      filesChanged: ["packages/app/inside.txt"],
      outsideCwd: { paths: ["ROOT_CONFIG.txt"], count: 3 },
      refusals: [
        { kind: "write", target: "/home/u/.bashrc" },
        { kind: "network", target: "example.com:443" },
      ],
    });
    expect(log.state.subTasks.get("a")!.refusals).toEqual([
      { attempt: 1, kind: "write", target: "/home/u/.bashrc" },
      { attempt: 1, kind: "network", target: "example.com:443" },
    ]);
    expect(log.state.subTasks.get("a")!.outsideCwd).toEqual([
      { attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 3 },
    ]);
  });
});

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const result: AttemptResult = {
  outcome: "finished",
  finalText: "did it",
  toolCalls: [],
  stepFinishReasons: ["stop"],
  filesChanged: [],
  usage: emptyUsage(),
  durationMs: 1,
};
const incomplete = (feedback: string): ProgressEntry => ({
  completed: false,
  incomplete: "judged-incomplete",
  summary: "not yet",
  outputData: "",
  feedback,
  evidence: [],
  usage: emptyUsage(),
});

/** A log as the manager writes it, one record a line. */
async function logOf(records: Record<string, unknown>[]): Promise<RunLog> {
  dir = await mkdtemp(join(tmpdir(), "taskledger-run-log-"));
  const path = join(dir, "r.jsonl");
  const time = new Date().toISOString();
  const lines = records.map((r, seq) =>
    JSON.stringify({ v: runLogVersion, runId: "r", seq, time, ...r }),
  );
  await writeFile(path, `${lines.join("\n")}\n`);
  const log = new RunLog(path, "r");
  await log.readMore();
  return log;
}

const ledger = {
  subTasks: [
    { id: "a", title: "A", description: "d", successCriteria: ["c"], dependsOn: [], checks: [] },
  ],
};
const attempt = (n: number, extra: Record<string, unknown> = {}) => [
  { type: "sub-task-started", subTaskId: "a", attempt: n, promptTokens: 1, ...extra },
  { type: "attempt-finished", subTaskId: "a", attempt: n, result },
  { type: "sub-task-evaluated", subTaskId: "a", attempt: n, entry: incomplete(`fix ${n}`) },
];

describe("a run's log as the page reads it", () => {
  it("shows 'Retried with' under the attempt that was retried, never under a round's candidate", async () => {
    const log = await logOf([
      { type: "run-started", request: "x", settings: {} },
      { type: "plan-created", ledger, decomposed: false, repaired: false, usage: emptyUsage() },
      {
        type: "candidates-started",
        subTaskId: "a",
        round: 1,
        reason: "risky",
        candidates: [{ attempt: 1 }, { attempt: 2 }],
      },
      ...attempt(1, { candidate: { round: 1 } }),
      ...attempt(2, { candidate: { round: 1 } }),
      {
        type: "candidates-chosen",
        subTaskId: "a",
        round: 1,
        by: "none",
        reason: "None complete.",
        candidates: [],
        usage: emptyUsage(),
      },
      { type: "sub-task-retrying", subTaskId: "a", attempt: 3, feedback: "after the round" },
      ...attempt(3),
      { type: "sub-task-retrying", subTaskId: "a", attempt: 4, feedback: "after attempt 3" },
    ]);
    expect(log.error).toBeUndefined();
    const shown = (log.attempts.get("a") ?? []).map((a) => [a.attempt, a.retryFeedback]);
    expect(shown).toEqual([
      [1, undefined],
      [2, undefined],
      [3, "after attempt 3"],
    ]);
  });
});

describe("the integration gate and the acceptance as the page reads them", () => {
  it("keeps the gate's runs and the verdicts for the timeline, and a merge sent back on its attempt", async () => {
    dir = await mkdtemp(join(tmpdir(), "taskledger-run-log-"));
    await storeGatedRun(dir, "g");
    const log = new RunLog(join(dir, "g.jsonl"), "g");
    await log.readMore();
    expect(log.error).toBeUndefined();
    const start = Date.parse("2026-11-25T19:00:00.000Z");
    expect(log.gateRuns).toEqual([
      {
        start: start + 8000 - 800,
        end: start + 8000,
        parts: ["a", "b"],
        final: false,
        passed: false,
        failed: ["npm test"],
      },
      {
        start: start + 9000 - 800,
        end: start + 9000,
        parts: ["a"],
        final: false,
        passed: true,
        failed: [],
      },
      {
        start: start + 11_000 - 800,
        end: start + 11_000,
        parts: ["b"],
        final: false,
        passed: false,
        failed: ["npm test"],
      },
      {
        start: start + 17_000 - 800,
        end: start + 17_000,
        parts: ["b"],
        final: false,
        passed: true,
        failed: [],
      },
    ]);
    expect(log.acceptance).toEqual([
      {
        at: start + 19_000,
        round: 1,
        verdict: "unsatisfied",
        missing: ["the README"],
        reason: undefined,
      },
    ]);
    const [first, second] = log.attempts.get("b")!;
    expect(first).toMatchObject({
      verdict: { completed: false, incomplete: "integration", summary: "Wrote B" },
      integration: {
        with: ["a"],
        checks: [{ command: "npm test", detail: "exit 1\nAssertionError: expected 2, got 3" }],
      },
    });
    expect(second?.integration).toBeUndefined();
    const timeline = timelineOf(log, false);
    expect(timeline.gate).toHaveLength(4);
    expect(timeline.acceptance?.[0]?.verdict).toBe("unsatisfied");
    expect(timeline.rows.map((r) => r.id)).toEqual(["a", "b"]);
  });

  it("a run without the gate has neither on its timeline", async () => {
    const log = await logOf([
      { type: "run-started", request: "x", settings: {} },
      { type: "plan-created", ledger, decomposed: false, repaired: false, usage: emptyUsage() },
    ]);
    const timeline = timelineOf(log, false);
    expect([timeline.gate, timeline.acceptance]).toEqual([undefined, undefined]);
  });
});

describe("a provider's limits as the page reads them", () => {
  it("keeps each refusal for the timeline and the limit on the attempt it ended", async () => {
    dir = await mkdtemp(join(tmpdir(), "taskledger-run-log-"));
    await storeLimitedRun(dir, "l");
    const log = new RunLog(join(dir, "l.jsonl"), "l");
    await log.readMore();
    expect(log.error).toBeUndefined();
    const start = Date.parse("2026-11-28T10:00:00.000Z");
    expect(
      log.providerWaits.map((w) => [w.key, w.subTaskId, w.at - start, w.until && w.until - start]),
    ).toEqual([
      ["openai/gpt-5", "a", 2000, 14_000],
      ["openai/gpt-5", "b", 2000, 14_000],
      ["anthropic/m", undefined, 3000, 6000],
      ["openai/gpt-5", "c", 17_000, undefined],
    ]);
    const [first, second] = log.attempts.get("a")!;
    expect(first).toMatchObject({
      outcome: "rate-limited",
      verdict: undefined,
      limit: { provider: "openai", kind: "rate-limit", statusCode: 429, retryAfterMs: 12_000 },
    });
    expect(second?.limit).toBeUndefined();
    expect(log.attempts.get("c")?.[0]?.limit).toMatchObject({
      kind: "quota",
      until: undefined,
      reason: expect.stringContaining("openai says its quota is exhausted"),
    });
    expect(timelineOf(log, false).waits).toHaveLength(4);
    expect(timelineOf(log, false).rows.find((r) => r.id === "a")?.attempts[0]?.outcome).toBe(
      "rate-limited",
    );
  });
});
