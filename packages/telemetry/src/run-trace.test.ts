import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { emptyUsage, type RunEvent, type RunReport } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { otelApi } from "./otel-api.js";
import { RunTrace } from "./run-trace.js";

type NewEvent = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, "runId" | "seq" | "time">
    : never
  : never;

const ledger = {
  subTasks: [
    { id: "a", title: "a", description: "a", successCriteria: ["a"], dependsOn: [], checks: [] },
  ],
};
const result = {
  outcome: "finished" as const,
  finalText: "",
  toolCalls: [],
  stepFinishReasons: ["stop"],
  filesChanged: [],
  usage: emptyUsage(),
  durationMs: 1,
};
const incomplete = {
  completed: false,
  summary: "no",
  outputData: "",
  feedback: "again",
  evidence: [{ source: "llm-judge", passed: false, detail: "no" }],
  usage: emptyUsage(),
};

function traced(events: NewEvent[]) {
  const api = otelApi()!;
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const trace = new RunTrace(
    api,
    provider.getTracer("test"),
    false,
    "run-1",
    [],
    api.context.active(),
    false,
  );
  for (const [seq, event] of events.entries()) {
    trace.onEvent({ ...event, runId: "run-1", seq, time: new Date().toISOString() } as RunEvent);
  }
  trace.end();
  return exporter.getFinishedSpans();
}

describe("RunTrace", () => {
  it("records the ladder: an alternate model, then a replan span that ends with the revision", () => {
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
      { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
      { type: "attempt-finished", subTaskId: "a", attempt: 1, result },
      { type: "sub-task-evaluated", subTaskId: "a", attempt: 1, entry: incomplete },
      {
        type: "sub-task-escalated",
        subTaskId: "a",
        step: "alternate-model",
        reason: "retries spent",
        agentModel: "p/other",
      },
      { type: "sub-task-retrying", subTaskId: "a", attempt: 2, feedback: "again" },
      {
        type: "sub-task-started",
        subTaskId: "a",
        attempt: 2,
        promptTokens: 10,
        agentModel: "p/other",
      },
      { type: "attempt-finished", subTaskId: "a", attempt: 2, result },
      { type: "sub-task-evaluated", subTaskId: "a", attempt: 2, entry: incomplete },
      { type: "sub-task-escalated", subTaskId: "a", step: "replan", reason: "still failing" },
      {
        type: "plan-revised",
        ledger,
        replaced: ["a"],
        added: ["a2"],
        reason: "replanned",
        usage: emptyUsage(),
      },
    ]);
    const attempts = spans.filter((s) => s.name === "invoke_agent a");
    expect(attempts.map((s) => s.attributes["taskledger.decision"])).toEqual([
      "alternate-model",
      "replan",
    ]);
    expect(attempts[1]?.attributes["gen_ai.request.model"]).toBe("other");
    expect(attempts[0]?.attributes["taskledger.verdict.incomplete_reason"]).toBe(
      "judged-incomplete",
    );
    const replan = spans.find((s) => s.name === "replanning a");
    expect(replan?.attributes).toMatchObject({
      "taskledger.replan.replaced": ["a"],
      "taskledger.replan.added": ["a2"],
    });
    // It ended with the revision, before the run's span did.
    const root = spans.find((s) => s.name === "invoke_workflow taskledger")!;
    expect(spans.indexOf(replan!)).toBeLessThan(spans.indexOf(root));
  });

  it("says on the attempt's span what it changed outside the run's directory", () => {
    const outsideCwd = { paths: ["ROOT_CONFIG.txt"], count: 1 };
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
      { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
      { type: "attempt-finished", subTaskId: "a", attempt: 1, result: { ...result, outsideCwd } },
      { type: "sub-task-evaluated", subTaskId: "a", attempt: 1, entry: incomplete },
      { type: "sub-task-retrying", subTaskId: "a", attempt: 2, feedback: "again" },
    ]);
    const attempt = spans.find((s) => s.name === "invoke_agent a")!;
    expect(attempt.attributes).toMatchObject({
      "taskledger.outside_cwd.count": 1,
      "taskledger.outside_cwd.paths": ["ROOT_CONFIG.txt"],
    });
  });

  it("says on the attempt's span what the OS sandbox refused it", () => {
    const refusals = [
      { kind: "write" as const, target: "/repo/ROOT.txt" },
      { kind: "network" as const, target: "example.com:80" },
    ];
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
      { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
      { type: "attempt-finished", subTaskId: "a", attempt: 1, result: { ...result, refusals } },
      { type: "sub-task-evaluated", subTaskId: "a", attempt: 1, entry: incomplete },
      { type: "sub-task-retrying", subTaskId: "a", attempt: 2, feedback: "again" },
    ]);
    const attempt = spans.find((s) => s.name === "invoke_agent a")!;
    expect(attempt.attributes["taskledger.sandbox.refusals"]).toEqual([
      "write /repo/ROOT.txt",
      "network example.com:80",
    ]);
  });

  it("marks a failed run and its budget stop on the run's span", () => {
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "budget-exhausted", kind: "cost", limit: 1, used: 1.5 },
      { type: "run-failed", error: { code: "invalid-plan", message: "bad plan" } },
    ]);
    const root = spans.find((s) => s.name === "invoke_workflow taskledger")!;
    expect(root.status.code).toBe(2);
    expect(root.attributes["error.type"]).toBe("invalid-plan");
    expect(root.events.map((e) => e.name)).toContain("taskledger.budget_exhausted");
    // The planning span a failed planning left open is ended with the run.
    expect(spans.map((s) => s.name)).toContain("planning");
  });
});

describe("RunTrace: the integration gate and the acceptance", () => {
  const completed = { ...incomplete, completed: true, feedback: "", evidence: [] };
  const npmTest = ["npm", "test"];
  const gated: NewEvent[] = [
    { type: "run-started", request: "r", cwd: "/" },
    { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
    { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
    { type: "attempt-finished", subTaskId: "a", attempt: 1, result },
    { type: "sub-task-evaluated", subTaskId: "a", attempt: 1, entry: completed },
    {
      type: "integration-checked",
      parts: ["a"],
      commit: "c1",
      tree: "t1",
      passed: false,
      results: [
        { argv: ["tsc"], passed: true, detail: "exit 0" },
        { argv: npmTest, passed: false, detail: "exit 1: expected 2" },
      ],
      durationMs: 1500,
    },
    {
      type: "sub-task-integration-failed",
      subTaskId: "a",
      attempt: 1,
      with: ["b"],
      entry: {
        ...incomplete,
        incomplete: "integration",
        evidence: [{ source: "integration", passed: false, detail: "npm test: exit 1" }],
      },
    },
    { type: "sub-task-retrying", subTaskId: "a", attempt: 2, feedback: "again" },
    {
      type: "integration-checked",
      parts: [],
      commit: "c2",
      final: true,
      passed: true,
      results: [{ argv: npmTest, passed: true, detail: "exit 0" }],
      durationMs: 900,
    },
    {
      type: "acceptance-judged",
      round: 1,
      verdict: "unsatisfied",
      missing: [{ what: "the README", why: "asked for" }],
      usage: { ...emptyUsage(), inputTokens: 100, outputTokens: 10 },
    },
    {
      type: "plan-revised",
      ledger,
      replaced: [],
      added: ["readme"],
      reason: "missing the README",
      usage: emptyUsage(),
      acceptance: 1,
    },
  ];

  it("a span for each gate run, timed from its record; the merge sent back said on its attempt", () => {
    const spans = traced(gated);
    const gates = spans.filter((s) => s.name.startsWith("integration_gate"));
    expect(gates.map((s) => s.name)).toEqual(["integration_gate", "integration_gate final"]);
    expect(gates[0]?.attributes).toMatchObject({
      "taskledger.step": "integration",
      "taskledger.integration.parts": ["a"],
      "taskledger.integration.passed": false,
      "taskledger.integration.final": false,
      "taskledger.integration.checks": ["tsc", "npm test"],
      "taskledger.integration.failed": ["npm test"],
      "taskledger.integration.commit": "c1",
    });
    const [seconds, nanos] = gates[0]!.duration;
    expect(seconds * 1000 + nanos / 1e6).toBeCloseTo(1500, 0);
    expect(gates[1]?.attributes["taskledger.integration.final"]).toBe(true);
    const attempt = spans.find((s) => s.name === "invoke_agent a")!;
    expect(attempt.attributes).toMatchObject({
      "taskledger.verdict.completed": false,
      "taskledger.verdict.incomplete_reason": "integration",
      "taskledger.decision": "retry",
    });
    const failed = attempt.events.find((e) => e.name === "taskledger.integration_failed");
    expect(failed?.attributes).toEqual({
      "taskledger.integration.with": ["b"],
      "taskledger.integration.failed": ["npm test"],
    });
  });

  it("the acceptance's verdict and what it planned are events of the run's span", () => {
    const spans = traced(gated);
    const root = spans.find((s) => s.name === "invoke_workflow taskledger")!;
    expect(root.attributes["taskledger.acceptance.verdict"]).toBe("unsatisfied");
    const verdict = root.events.find((e) => e.name === "taskledger.acceptance");
    expect(verdict?.attributes).toMatchObject({
      "taskledger.acceptance.round": 1,
      "taskledger.acceptance.verdict": "unsatisfied",
      "taskledger.acceptance.missing_count": 1,
      "gen_ai.usage.input_tokens": 100,
    });
    // Without contents, the judge's words stay out.
    expect(verdict?.attributes?.["taskledger.acceptance.missing"]).toBeUndefined();
    const continued = root.events.find((e) => e.name === "taskledger.acceptance_continued");
    expect(continued?.attributes).toEqual({
      "taskledger.acceptance.round": 1,
      "taskledger.acceptance.added": ["readme"],
    });
  });
});

describe("RunTrace: a provider's limits", () => {
  it("an event on the attempt's span it ended (which ends there), the manager's on the run's", () => {
    const limit = {
      kind: "rate-limit" as const,
      provider: "openai",
      retryAfterMs: 12_000,
      statusCode: 429,
      message: "Rate limit reached",
    };
    const complete = { ...incomplete, completed: true, evidence: [] };
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
      { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
      // A pause is logged after its attempt's result (a quota before it).
      {
        type: "attempt-finished",
        subTaskId: "a",
        attempt: 1,
        result: { ...result, outcome: "rate-limited", limit },
      },
      {
        type: "provider-limited",
        key: "openai/gpt-5",
        provider: "openai",
        limit,
        subTaskId: "a",
        attempt: 1,
        until: "2026-11-28T10:00:13.000Z",
        waitMs: 13_000,
      },
      {
        type: "provider-limited",
        key: "anthropic/m",
        provider: "anthropic",
        limit: { kind: "overloaded", statusCode: 529, message: "Overloaded" },
        call: "manager",
        until: "2026-11-28T10:00:03.000Z",
        waitMs: 3000,
      },
      { type: "sub-task-started", subTaskId: "a", attempt: 2, promptTokens: 10 },
      { type: "attempt-finished", subTaskId: "a", attempt: 2, result },
      { type: "sub-task-evaluated", subTaskId: "a", attempt: 2, entry: complete },
      { type: "sub-task-completed", subTaskId: "a", attempts: 1, entry: complete },
    ]);
    const [first, second] = spans.filter((s) => s.name === "invoke_agent a");
    expect(first?.attributes).toMatchObject({
      "taskledger.outcome": "rate-limited",
      "taskledger.provider_limit.provider": "openai",
      "taskledger.provider_limit.kind": "rate-limit",
      "taskledger.provider_limit.retry_after_ms": 12_000,
      "taskledger.provider_limit.wait_ms": 13_000,
      "taskledger.provider_limit.status_code": 429,
    });
    // No rung decided it: the next attempt's decision is not said on it, nor is it an error.
    expect(first?.attributes["taskledger.decision"]).toBeUndefined();
    expect(first?.status.code).toBe(0);
    expect(first?.events.map((e) => e.name)).toEqual(["taskledger.provider_limited"]);
    expect(first?.events[0]?.attributes).toMatchObject({
      "taskledger.provider_limit.key": "openai/gpt-5",
      "taskledger.provider_limit.until": "2026-11-28T10:00:13.000Z",
      "taskledger.provider_limit.message": "Rate limit reached",
    });
    expect(second?.attributes["taskledger.decision"]).toBe("complete");
    const root = spans.find((s) => s.name === "invoke_workflow taskledger")!;
    const manager = root.events.find((e) => e.name === "taskledger.provider_limited");
    expect(manager?.attributes).toMatchObject({
      "taskledger.provider_limit.provider": "anthropic",
      "taskledger.provider_limit.kind": "overloaded",
      "taskledger.provider_limit.status_code": 529,
      "taskledger.provider_limit.wait_ms": 3000,
      "taskledger.provider_limit.call": "manager",
    });
  });

  it("a limit waiting cannot help stays on its attempt's span until the ladder decides, and the run's totals", () => {
    const quota = { kind: "quota" as const, statusCode: 429, message: "You exceeded your quota" };
    const spans = traced([
      { type: "run-started", request: "r", cwd: "/" },
      { type: "plan-created", ledger, decomposed: true, repaired: false, usage: emptyUsage() },
      { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 10 },
      {
        type: "provider-limited",
        key: "agent",
        provider: "openai",
        limit: quota,
        subTaskId: "a",
        attempt: 1,
        waitMs: 0,
        reason: "openai says its quota is exhausted: You exceeded your quota",
        stops: true,
      },
      {
        type: "attempt-finished",
        subTaskId: "a",
        attempt: 1,
        result: { ...result, outcome: "rate-limited", limit: quota },
      },
      {
        type: "sub-task-failed",
        subTaskId: "a",
        attempts: 0,
        reason: "openai says its quota is exhausted: You exceeded your quota",
        code: "provider-limit",
      },
      {
        type: "run-finished",
        report: {
          status: "partial",
          reason: "openai says its quota is exhausted: You exceeded your quota",
          usage: { manager: emptyUsage(), agents: emptyUsage(), total: emptyUsage() },
          providers: [
            { key: "agent", provider: "openai", waits: 2, waitedMs: 9000, rejected: 3 },
            { key: "anthropic/m", provider: "anthropic", waits: 1, waitedMs: 1000, rejected: 1 },
          ],
        } as unknown as RunReport,
      },
    ]);
    const root = spans.find((s) => s.name === "invoke_workflow taskledger")!;
    expect(root.attributes).toMatchObject({
      "taskledger.provider_limit.waits": 3,
      "taskledger.provider_limit.waited_ms": 10_000,
      "taskledger.provider_limit.rejected": 4,
    });
    const attempt = spans.find((s) => s.name === "invoke_agent a")!;
    expect(attempt.attributes["taskledger.decision"]).toBe("fail");
    expect(attempt.events[0]?.attributes).toMatchObject({
      "taskledger.provider_limit.kind": "quota",
      "taskledger.provider_limit.reason":
        "openai says its quota is exhausted: You exceeded your quota",
      "taskledger.provider_limit.stops": true,
    });
    expect(attempt.events[0]?.attributes?.["taskledger.provider_limit.until"]).toBeUndefined();
  });
});
