import {
  applyRunEvent,
  buildReport,
  createRunState,
  defaultRunSettings,
  type RunEvent,
  runReportSchema,
} from "@taskledger/core";
import pc from "picocolors";
import { describe, expect, it } from "vitest";
import { eventLines } from "./event-lines.js";
import { toJsonReport } from "./json-report.js";
import { applyEvent, createProgressState } from "./progress-state.js";
import { providerLines } from "./provider-limit-lines.js";
import { liveFrame } from "./reporter.js";
import { summaryTable } from "./summary-table.js";

const c = pc.createColors(false);
const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
const subTask = (id: string, title: string) => ({
  id,
  title,
  description: "d",
  successCriteria: ["c"],
  dependsOn: [],
  checks: [],
});
const start = Date.parse("2026-11-28T10:00:00.000Z");
const at = (ms: number) => new Date(start + ms).toISOString();
const limit = {
  kind: "rate-limit" as const,
  provider: "openai",
  retryAfterMs: 12_000,
  statusCode: 429,
  message: "Rate limit reached for gpt-5",
};
const quota = {
  kind: "quota" as const,
  provider: "openai",
  statusCode: 429,
  message: "You exceeded your current quota",
};
const result = (outcome: "finished" | "rate-limited") => ({
  outcome,
  finalText: outcome === "finished" ? "done" : "",
  toolCalls: [],
  stepFinishReasons: outcome === "finished" ? ["stop"] : [],
  filesChanged: [],
  usage,
  durationMs: 1000,
  ...(outcome === "rate-limited" ? { limit, error: limit.message } : {}),
});
const entry = {
  completed: true,
  summary: "Wrote it",
  outputData: "",
  feedback: "",
  evidence: [],
  usage,
};

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Raw = DistributiveOmit<RunEvent, "seq" | "runId" | "time"> & { at: number };

/**
 * Three lanes on openai/gpt-5: a and b limited in one pause (b's end 0.4 s later), the manager's
 * call paused on its own provider, a limited again after the pause; a completes, then c's
 * provider says its quota is gone with no alternate model left. In core's order: a pause is
 * logged after its attempt's result, a quota before it.
 */
function events(): RunEvent[] {
  const limited = (
    subTaskId: string,
    attempt: number,
    from: number,
    waitMs: number,
  ): Raw & { type: "provider-limited" } => ({
    type: "provider-limited",
    key: "openai/gpt-5",
    provider: "openai",
    limit,
    subTaskId,
    attempt,
    until: at(from + waitMs),
    waitMs,
    at: from,
  });
  const raw: Raw[] = [
    {
      type: "run-started",
      request: "Write A, B and C",
      cwd: "/p",
      settings: defaultRunSettings,
      at: 0,
    },
    {
      type: "plan-created",
      ledger: {
        subTasks: [subTask("a", "Write A"), subTask("b", "Write B"), subTask("c", "Write C")],
      },
      decomposed: true,
      repaired: false,
      usage,
      at: 0,
    },
    { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9, at: 0 },
    { type: "sub-task-started", subTaskId: "b", attempt: 1, promptTokens: 9, at: 0 },
    {
      type: "attempt-finished",
      subTaskId: "a",
      attempt: 1,
      result: result("rate-limited"),
      at: 1000,
    },
    limited("a", 1, 1000, 12_000),
    {
      type: "attempt-finished",
      subTaskId: "b",
      attempt: 1,
      result: result("rate-limited"),
      at: 1100,
    },
    limited("b", 1, 1100, 12_300),
    {
      type: "provider-limited",
      key: "anthropic/claude-opus-5-5",
      provider: "anthropic",
      limit: { kind: "overloaded", statusCode: 529, message: "Overloaded" },
      call: "manager",
      until: at(4000),
      waitMs: 3000,
      at: 1000,
    },
    { type: "sub-task-started", subTaskId: "a", attempt: 2, promptTokens: 9, at: 14_000 },
    {
      type: "attempt-finished",
      subTaskId: "a",
      attempt: 2,
      result: result("rate-limited"),
      at: 15_000,
    },
    limited("a", 2, 15_000, 4000),
    { type: "sub-task-started", subTaskId: "a", attempt: 3, promptTokens: 9, at: 20_000 },
    {
      type: "attempt-finished",
      subTaskId: "a",
      attempt: 3,
      result: result("finished"),
      at: 21_000,
    },
    { type: "sub-task-completed", subTaskId: "a", attempts: 3, entry, at: 22_000 },
    { type: "sub-task-started", subTaskId: "c", attempt: 1, promptTokens: 9, at: 22_000 },
    {
      type: "provider-limited",
      key: "openai/gpt-5",
      provider: "openai",
      limit: quota,
      subTaskId: "c",
      attempt: 1,
      waitMs: 0,
      reason: "openai says its quota is exhausted: You exceeded your current quota",
      stops: true,
      at: 23_000,
    },
    {
      type: "attempt-finished",
      subTaskId: "c",
      attempt: 1,
      result: { ...result("rate-limited"), limit: quota, error: quota.message },
      at: 23_000,
    },
    {
      type: "sub-task-failed",
      subTaskId: "c",
      attempts: 0,
      reason: "openai says its quota is exhausted: You exceeded your current quota",
      code: "provider-limit",
      at: 23_000,
    },
  ];
  return raw.map(({ at: ms, ...e }, seq) => ({ ...e, seq, runId: "r", time: at(ms) }) as RunEvent);
}

function reportOf(list: RunEvent[]) {
  const state = createRunState("r");
  for (const event of list) applyRunEvent(state, event);
  return runReportSchema.parse(
    buildReport(state, {
      cancelled: false,
      stopReason: undefined,
      startedAt: new Date(start),
      finishedAt: new Date(start + 24_000),
    }),
  );
}

describe("a provider's limits on the terminal", () => {
  it("one line a pause, however many lanes it stopped, and one when waiting cannot help", () => {
    const state = createProgressState();
    const lines: string[] = [];
    for (const event of events()) {
      applyEvent(state, event, 0);
      if (event.type === "provider-limited") lines.push(...eventLines(event, state, c));
    }
    expect(lines).toEqual([
      "⏸ openai is rate-limiting 429: resuming in 12.0s (Step 1/3 Write A, attempt 1)",
      "⏸ anthropic is overloaded 529: resuming in 3.0s (the manager's call)",
      "⏸ openai is rate-limiting 429: resuming in 4.0s (Step 1/3 Write A, attempt 2)",
      "✘ openai says its quota is exhausted: You exceeded your current quota (Step 3/3 Write C, attempt 1); the run starts no more work",
    ]);
  });

  it("the live view says what a waiting sub-task and the manager's call wait for, until the pause ends", () => {
    const state = createProgressState();
    const list = events();
    // Up to b's rate-limited attempt and the manager's pause (records 0-8), at 5 s.
    for (const event of list.slice(0, 9)) applyEvent(state, event, start + 5000);
    expect(liveFrame(state, "⠋", start + 5000, c)).toBe(
      [
        "⠋ Step 1/3: Write A 5.0s · waiting for openai, resumes in 8.0s",
        "⠋ Step 2/3: Write B 5.0s · waiting for openai, resumes in 8.4s",
        "0/3 done",
      ].join("\n"),
    );
    expect(liveFrame(state, "⠋", start + 3500, c)).toContain(
      "⏸ The manager's call is waiting for anthropic, resumes in 500ms",
    );
    // a started again: it waits no more; b's pause has ended by 14 s.
    applyEvent(state, list[9]!, start + 14_000);
    const frame = liveFrame(state, "⠋", start + 14_000, c);
    expect(frame).not.toContain("waiting");
    expect(frame).toContain("Step 1/3: Write A");
  });

  it("a lane limited more than a second past the shown pause's end, or once it ended, is a line of its own", () => {
    const state = createProgressState();
    const pause = (seq: number, from: number, waitMs: number): RunEvent => ({
      seq,
      runId: "r",
      time: at(from),
      type: "provider-limited",
      key: "agent",
      provider: "openai",
      limit: { kind: "rate-limit", message: "slow down" },
      call: "manager",
      until: at(from + waitMs),
      waitMs,
    });
    const shown = [
      pause(1, 0, 10_000),
      pause(2, 500, 10_400),
      pause(3, 600, 12_000),
      pause(4, 13_000, 2000),
    ].map((event) => {
      applyEvent(state, event, 0);
      return eventLines(event, state, c).length;
    });
    expect(shown).toEqual([1, 0, 1, 1]);
  });

  it("the summary names each provider's waits, and a sub-task's rate-limited attempts beside its count", () => {
    const report = reportOf(events());
    expect(report.status).toBe("partial");
    expect(providerLines(report.providers, c)).toEqual([
      "openai: 2 waits, 16.4s waited, 4 refused; gave up: You exceeded your current quota",
      "anthropic: 1 wait, 3.0s waited, 1 refused",
    ]);
    const table = summaryTable(report, new Map(), c);
    expect(table).toMatch(/^a +completed +1 \+2 rate-limited /m);
    expect(table).toMatch(/^b +\S+ +0 \+1 rate-limited /m);
    expect(table).toMatch(/^c +failed +0 \+1 rate-limited /m);
    expect(table).toContain("openai: 2 waits, 16.4s waited, 4 refused");
    expect(providerLines(undefined, c)).toEqual([]);
  });

  it("two keys of one provider are told apart by their key", () => {
    const wait = { waits: 1, waitedMs: 2000, rejected: 1 };
    expect(
      providerLines(
        [
          { key: "openai/gpt-5", provider: "openai", ...wait },
          { key: "openai/o4", provider: "openai", ...wait },
        ],
        c,
      ),
    ).toEqual([
      "openai (openai/gpt-5): 1 wait, 2.0s waited, 1 refused",
      "openai (openai/o4): 1 wait, 2.0s waited, 1 refused",
    ]);
  });

  it("--json carries providers ([] when none refused) and each sub-task's rateLimited (absent when none)", () => {
    const json = toJsonReport(reportOf(events()));
    expect(json.providers).toEqual([
      {
        key: "openai/gpt-5",
        provider: "openai",
        waits: 2,
        waitedMs: 16_400,
        rejected: 4,
        exhausted: "You exceeded your current quota",
      },
      {
        key: "anthropic/claude-opus-5-5",
        provider: "anthropic",
        waits: 1,
        waitedMs: 3000,
        rejected: 1,
      },
    ]);
    const byId = Object.fromEntries(json.subTasks.map((s) => [s.id, s]));
    expect(byId.a).toMatchObject({ attempts: 1, rateLimited: 2 });
    expect(byId.b).toMatchObject({ attempts: 0, rateLimited: 1 });
    expect(byId.c).toMatchObject({ attempts: 0, rateLimited: 1 });
    expect(byId.c).toMatchObject({ failure: "provider-limit" });
    const plain = toJsonReport({
      ...reportOf(events()),
      providers: undefined,
      subTasks: [{ ...reportOf(events()).subTasks[0]!, rateLimited: undefined }],
    });
    expect(plain.providers).toEqual([]);
    expect("rateLimited" in plain.subTasks[0]!).toBe(false);
  });
});
