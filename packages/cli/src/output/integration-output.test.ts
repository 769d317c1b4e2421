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
import { acceptanceLines, integrationLines, summaryTable } from "./summary-table.js";

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
const ledger = { subTasks: [subTask("a", "Write A"), subTask("b", "Write B")] };
const entry = (summary: string) => ({
  completed: true,
  summary,
  outputData: "",
  feedback: "",
  evidence: [],
  usage,
});
const npmTest = ["npm", "test"];

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A run of two sub-tasks: b's first merge broke `npm test`, the final tip passed, then the acceptance. */
function events(verdict: "satisfied" | "unsatisfied"): RunEvent[] {
  const raw: DistributiveOmit<RunEvent, "seq" | "runId" | "time">[] = [
    {
      type: "run-started",
      request: "Write A and B",
      cwd: "/p",
      settings: { ...defaultRunSettings, acceptance: { rounds: 1 } },
    },
    { type: "plan-created", ledger, decomposed: true, repaired: false, usage },
    { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9 },
    { type: "sub-task-started", subTaskId: "b", attempt: 1, promptTokens: 9 },
    {
      type: "integration-checked",
      parts: ["a", "b"],
      commit: "c1",
      tree: "t1",
      passed: false,
      results: [{ argv: npmTest, passed: false, detail: "exit 1: expected 2, got 3" }],
      durationMs: 2100,
    },
    {
      type: "integration-checked",
      parts: ["a"],
      commit: "c2",
      tree: "t2",
      passed: true,
      results: [{ argv: npmTest, passed: true, detail: "exit 0" }],
      durationMs: 1000,
    },
    {
      type: "sub-task-completed",
      subTaskId: "a",
      attempts: 1,
      entry: entry("Wrote A"),
      workspace: { commit: "w1", merge: "c2", filesChanged: ["a.js"], tree: "t2" },
    },
    {
      type: "integration-checked",
      parts: ["b"],
      commit: "c3",
      tree: "t3",
      passed: false,
      results: [{ argv: npmTest, passed: false, detail: "exit 1: expected 2, got 3" }],
      durationMs: 1000,
    },
    {
      type: "sub-task-integration-failed",
      subTaskId: "b",
      attempt: 1,
      with: ["a"],
      entry: { ...entry("Wrote B"), completed: false, incomplete: "integration" },
    },
    { type: "sub-task-retrying", subTaskId: "b", attempt: 2, feedback: "Make it pass with a." },
    { type: "sub-task-started", subTaskId: "b", attempt: 2, promptTokens: 9 },
    {
      type: "sub-task-completed",
      subTaskId: "b",
      attempts: 2,
      entry: entry("Wrote B again"),
      workspace: { commit: "w2", merge: "c4", filesChanged: ["b.js"], tree: "t4" },
    },
    {
      type: "integration-checked",
      parts: [],
      commit: "c4",
      tree: "t4",
      final: true,
      passed: true,
      results: [{ argv: npmTest, passed: true, detail: "exit 0" }],
      durationMs: 900,
    },
    {
      type: "acceptance-judged",
      round: 1,
      verdict,
      missing:
        verdict === "satisfied"
          ? []
          : [{ what: "the README section", why: "The request asks for usage docs." }],
      usage,
    },
  ];
  return raw.map((e, seq) => ({ ...e, seq, runId: "r", time: "t" }) as RunEvent);
}

function reportOf(list: RunEvent[]) {
  const state = createRunState("r");
  for (const event of list) applyRunEvent(state, event);
  return runReportSchema.parse(
    buildReport(state, {
      cancelled: false,
      stopReason: undefined,
      startedAt: new Date(0),
      finishedAt: new Date(1000),
    }),
  );
}

describe("the gate and the acceptance on the terminal", () => {
  it("a line for each gate run, the merge sent back with its failing command, and the verdict", () => {
    const state = createProgressState();
    const lines: string[] = [];
    for (const event of events("unsatisfied")) {
      applyEvent(state, event, 0);
      if (
        event.type === "integration-checked" ||
        event.type.includes("integration") ||
        event.type === "acceptance-judged"
      )
        lines.push(...eventLines(event, state, c));
    }
    expect(lines).toEqual([
      "⚠ Checked a, b merged on the run's branch: `npm test` failed (2.1s); looking for the part that breaks it",
      "✔ Checked a merged on the run's branch: `npm test` passed (1.0s)",
      "⚠ Checked b merged on the run's branch: `npm test` failed (1.0s)",
      "⚠ Step 2/2 Write B attempt 1 broke `npm test` once merged with a; it goes on from the run's branch.",
      "    exit 1: expected 2, got 3",
      "✔ Checked the final result: `npm test` passed (900ms)",
      "⚠ Acceptance (round 1): the request is not met as a whole; missing:",
      "  · the README section — The request asks for usage docs.",
    ]);
  });

  it("a final result that fails is not applied; an unavailable verdict says why", () => {
    const state = createProgressState();
    const final: RunEvent = {
      seq: 1,
      runId: "r",
      time: "t",
      type: "integration-checked",
      parts: [],
      commit: "c",
      final: true,
      passed: false,
      results: [
        { argv: ["tsc"], passed: true, detail: "exit 0" },
        { argv: npmTest, passed: false, detail: "exit 1" },
      ],
      durationMs: 61_000,
    };
    expect(eventLines(final, state, c)).toEqual([
      "⚠ Checked the final result: `npm test` failed (1m01s); not applied",
    ]);
    const unavailable: RunEvent = {
      seq: 2,
      runId: "r",
      time: "t",
      type: "acceptance-judged",
      round: 1,
      verdict: "unavailable",
      missing: [],
      reason: "the model timed out",
      usage,
    };
    expect(eventLines(unavailable, state, c)).toEqual([
      "Acceptance: no verdict (the model timed out); the checked work stands.",
    ]);
  });

  it("sub-tasks added for what the acceptance found missing are a plan extended, not a replacement", () => {
    const state = createProgressState();
    const revised: RunEvent = {
      seq: 1,
      runId: "r",
      time: "t",
      type: "plan-revised",
      ledger: { subTasks: [...ledger.subTasks, subTask("readme", "Write the README")] },
      replaced: [],
      added: ["readme"],
      reason: "missing the README",
      usage,
      acceptance: 1,
    };
    applyEvent(state, revised, 0);
    expect(eventLines(revised, state, c)).toEqual([
      "Plan extended for what is missing:",
      "  Write the README [readme]",
    ]);
  });

  it("the summary says what the gate ran and found, and the verdict with what is missing", () => {
    const report = reportOf(events("unsatisfied"));
    expect(report.status).toBe("partial");
    expect(integrationLines(report.integration, c)).toEqual([
      "integration (batch): 4 check runs, 1 merge sent back; the final result passed `npm test`",
      "  b attempt 1 broke `npm test` once merged with a: exit 1: expected 2, got 3",
    ]);
    expect(acceptanceLines(report.acceptance, c)).toEqual([
      "acceptance: unsatisfied, the request is not met as a whole (1 round, 15 tokens, unknown); missing:",
      "  · the README section — The request asks for usage docs.",
    ]);
    const table = summaryTable(report, new Map(), c);
    expect(table).toContain("integration (batch): 4 check runs");
    expect(table).toContain("acceptance: unsatisfied");
    const satisfied = reportOf(events("satisfied"));
    expect(satisfied.status).toBe("completed");
    expect(acceptanceLines(satisfied.acceptance, c)).toEqual([
      "acceptance: satisfied, the request is met as a whole (1 round, 15 tokens, unknown)",
    ]);
  });

  it("a failing final result names the failing command and its output", () => {
    const lines = integrationLines(
      {
        mode: "end",
        runs: 1,
        failures: [],
        final: {
          passed: false,
          checks: [
            { argv: ["tsc"], passed: true, detail: "exit 0" },
            { argv: npmTest, passed: false, detail: "exit 1\nexpected 2" },
          ],
        },
      },
      c,
    );
    expect(lines).toEqual([
      "integration (end): 1 check run, 0 merges sent back; the final result failed `npm test`",
      "  final: `npm test`: exit 1 expected 2",
    ]);
    expect(integrationLines(undefined, c)).toEqual([]);
    expect(acceptanceLines(undefined, c)).toEqual([]);
  });

  it("--json carries integration and acceptance (null when absent)", () => {
    const json = toJsonReport(reportOf(events("unsatisfied")));
    expect(json.integration).toMatchObject({
      mode: "batch",
      runs: 4,
      failures: [{ subTaskId: "b", attempt: 1, with: ["a"], checks: [{ argv: npmTest }] }],
      final: { passed: true },
    });
    expect(json.acceptance).toMatchObject({
      verdict: "unsatisfied",
      rounds: 1,
      missing: [{ what: "the README section" }],
      continued: [],
    });
    const plain = toJsonReport({
      ...reportOf(events("satisfied")),
      integration: undefined,
      acceptance: undefined,
    });
    expect([plain.integration, plain.acceptance]).toEqual([null, null]);
  });
});
