import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createManager,
  FileRunStore,
  type RunReport,
  runLogVersion,
  type TaskLedgerInput,
} from "@taskledger/core";
import { createFakeExecutor, type FakeAttempt } from "@taskledger/testing";

/** A stored run made by the real manager with a host plan and a fake executor. */
export async function storeRun(
  store: string,
  request: string,
  plan: TaskLedgerInput,
  attempt: FakeAttempt | ((subTaskId: string) => FakeAttempt) = { type: "success", text: "done" },
  host: Record<string, unknown> = { provider: "openai", model: "m", agentModel: "openai/a" },
): Promise<RunReport> {
  const manager = createManager({
    cwd: process.cwd(),
    executor: createFakeExecutor({
      script: ({ subTaskId }) => (typeof attempt === "function" ? attempt(subTaskId) : attempt),
    }),
    store: new FileRunStore(store),
    maxSubTasks: plan.subTasks.length,
    concurrency: 8,
  });
  return manager.run(request, { plan, settings: { host } });
}

/** A chain-and-fan plan of `count` sub-tasks: each depends on one or two before it. */
export function widePlan(count: number): TaskLedgerInput {
  return {
    subTasks: Array.from({ length: count }, (_, i) => ({
      id: `s${i + 1}`,
      title: `Step ${i + 1}`,
      description: `Do step ${i + 1}.`,
      successCriteria: [`step ${i + 1} is done`],
      dependsOn:
        i === 0 ? [] : i < 8 ? ["s1"] : [`s${i - 7}`, ...(i % 3 === 0 ? [`s${i - 1}`] : [])],
    })),
  };
}

/**
 * The log of a run whose integration gate sent `b`'s first merge back (`npm test` broke with
 * `a`'s work), checked the final result, and whose acceptance found the README missing: records
 * as the manager writes them, a second apart from `start`.
 */
export function gatedRunRecords(runId: string, start = Date.parse("2026-11-25T19:00:00.000Z")) {
  const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
  const subTask = (id: string, title: string) => ({
    id,
    title,
    description: "d",
    successCriteria: ["c"],
    dependsOn: [],
    checks: [],
  });
  const entry = (summary: string) => ({
    completed: true,
    summary,
    outputData: "",
    feedback: "",
    evidence: [],
    usage,
  });
  const result = {
    outcome: "finished",
    finalText: "done",
    toolCalls: [],
    stepFinishReasons: ["stop"],
    filesChanged: [],
    usage,
    durationMs: 1000,
  };
  const npmTest = ["npm", "test"];
  const failed = {
    argv: npmTest,
    passed: false,
    detail: "exit 1\nAssertionError: expected 2, got 3",
  };
  const records: Record<string, unknown>[] = [
    {
      type: "run-started",
      request: "Write A and B, with a README",
      cwd: "/p",
      settings: {
        concurrency: 2,
        maxRetries: 2,
        maxSubTasks: 20,
        contextTokenBudget: 4000,
        budget: {},
        decompose: "auto",
        alternateAgentModels: [],
        replan: { enabled: true, maxPerSubTask: 1, maxPerRun: 3 },
        integration: "batch",
        acceptance: { rounds: 0 },
        host: { provider: "openai", model: "m", agentModel: "openai/a" },
      },
    },
    {
      type: "plan-created",
      ledger: { subTasks: [subTask("a", "Write A"), subTask("b", "Write B")] },
      decomposed: true,
      repaired: false,
      usage,
    },
    { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9 },
    { type: "sub-task-started", subTaskId: "b", attempt: 1, promptTokens: 9 },
    { type: "attempt-finished", subTaskId: "a", attempt: 1, result },
    { type: "sub-task-evaluated", subTaskId: "a", attempt: 1, entry: entry("Wrote A") },
    { type: "attempt-finished", subTaskId: "b", attempt: 1, result },
    { type: "sub-task-evaluated", subTaskId: "b", attempt: 1, entry: entry("Wrote B") },
    {
      type: "integration-checked",
      parts: ["a", "b"],
      commit: "c1",
      tree: "t1",
      passed: false,
      results: [failed],
      durationMs: 800,
    },
    {
      type: "integration-checked",
      parts: ["a"],
      commit: "c2",
      tree: "t2",
      passed: true,
      results: [{ argv: npmTest, passed: true, detail: "exit 0" }],
      durationMs: 800,
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
      results: [failed],
      durationMs: 800,
    },
    {
      type: "sub-task-integration-failed",
      subTaskId: "b",
      attempt: 1,
      with: ["a"],
      entry: {
        ...entry("Wrote B"),
        completed: false,
        feedback: "Merged with a, it fails `npm test`.",
        incomplete: "integration",
      },
    },
    { type: "sub-task-retrying", subTaskId: "b", attempt: 2, feedback: "Make it pass with a." },
    { type: "sub-task-started", subTaskId: "b", attempt: 2, promptTokens: 9 },
    { type: "attempt-finished", subTaskId: "b", attempt: 2, result },
    { type: "sub-task-evaluated", subTaskId: "b", attempt: 2, entry: entry("Wrote B again") },
    {
      type: "integration-checked",
      parts: ["b"],
      commit: "c4",
      tree: "t4",
      passed: true,
      results: [{ argv: npmTest, passed: true, detail: "exit 0" }],
      durationMs: 800,
    },
    {
      type: "sub-task-completed",
      subTaskId: "b",
      attempts: 2,
      entry: entry("Wrote B again"),
      workspace: { commit: "w2", merge: "c4", filesChanged: ["b.js"], tree: "t4" },
    },
    {
      type: "acceptance-judged",
      round: 1,
      verdict: "unsatisfied",
      missing: [{ what: "the README", why: "The request asks for one." }],
      usage,
    },
  ];
  return records.map((record, seq) => ({
    v: runLogVersion,
    runId,
    seq,
    time: new Date(start + seq * 1000).toISOString(),
    ...record,
  }));
}

/** Writes the gated run's log into `store`, as `FileRunStore` would. */
export async function storeGatedRun(store: string, runId = "gated-run"): Promise<void> {
  const lines = gatedRunRecords(runId).map((record) => JSON.stringify(record));
  await writeFile(join(store, `${runId}.jsonl`), `${lines.join("\n")}\n`);
}

/**
 * The log of a run whose agents' provider (openai/gpt-5) paused `a` and `b` in one 12 s pause
 * and whose manager's call waited 3 s for its own; both ran again and completed, then `c` met
 * openai's spent quota with no alternate model left and failed: records as the manager writes
 * them (a pause after its attempt's result, a quota before it), each at its second from `start`.
 */
export function limitedRunRecords(runId: string, start = Date.parse("2026-11-28T10:00:00.000Z")) {
  const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
  const subTask = (id: string, title: string) => ({
    id,
    title,
    description: "d",
    successCriteria: ["c"],
    dependsOn: [],
    checks: [],
  });
  const entry = {
    completed: true,
    summary: "Done",
    outputData: "",
    feedback: "",
    evidence: [],
    usage,
  };
  const rateLimit = {
    kind: "rate-limit",
    provider: "openai",
    retryAfterMs: 12_000,
    statusCode: 429,
    message: "Rate limit reached for gpt-5 in organization org-1 on tokens per min",
  };
  const quota = {
    kind: "quota",
    provider: "openai",
    statusCode: 429,
    message: "You exceeded your current quota, please check your plan and billing details",
  };
  const result = (limit?: Record<string, unknown>) => ({
    outcome: limit ? "rate-limited" : "finished",
    finalText: limit ? "" : "done",
    toolCalls: [],
    stepFinishReasons: limit ? [] : ["stop"],
    filesChanged: [],
    usage,
    durationMs: 1000,
    ...(limit ? { limit, error: limit.message } : {}),
  });
  const second = (s: number) => new Date(start + s * 1000).toISOString();
  const limited = (subTaskId: string, at: number, until: number) => ({
    type: "provider-limited",
    key: "openai/gpt-5",
    provider: "openai",
    limit: rateLimit,
    subTaskId,
    attempt: 1,
    until: second(until),
    waitMs: (until - at) * 1000,
  });
  const records: [number, Record<string, unknown>][] = [
    [
      0,
      {
        type: "run-started",
        request: "Write A, B and C under a rate limit",
        cwd: "/p",
        settings: {
          concurrency: 3,
          maxRetries: 2,
          maxSubTasks: 20,
          contextTokenBudget: 4000,
          budget: {},
          decompose: "auto",
          alternateAgentModels: [],
          replan: { enabled: true, maxPerSubTask: 1, maxPerRun: 3 },
          host: { provider: "anthropic", model: "m", agentModel: "openai/gpt-5" },
        },
      },
    ],
    [
      1,
      {
        type: "plan-created",
        ledger: {
          subTasks: [subTask("a", "Write A"), subTask("b", "Write B"), subTask("c", "Write C")],
        },
        decomposed: true,
        repaired: false,
        usage,
      },
    ],
    [1, { type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 9 }],
    [1, { type: "sub-task-started", subTaskId: "b", attempt: 1, promptTokens: 9 }],
    [2, { type: "attempt-finished", subTaskId: "a", attempt: 1, result: result(rateLimit) }],
    [2, limited("a", 2, 14)],
    [2, { type: "attempt-finished", subTaskId: "b", attempt: 1, result: result(rateLimit) }],
    [2, limited("b", 2, 14)],
    [
      3,
      {
        type: "provider-limited",
        key: "anthropic/m",
        provider: "anthropic",
        limit: { kind: "overloaded", statusCode: 529, message: "Overloaded" },
        call: "manager",
        until: second(6),
        waitMs: 3000,
      },
    ],
    [14, { type: "sub-task-started", subTaskId: "a", attempt: 2, promptTokens: 9 }],
    [15, { type: "attempt-finished", subTaskId: "a", attempt: 2, result: result() }],
    [15, { type: "sub-task-evaluated", subTaskId: "a", attempt: 2, entry }],
    [15, { type: "sub-task-completed", subTaskId: "a", attempts: 2, entry }],
    [15, { type: "sub-task-started", subTaskId: "b", attempt: 2, promptTokens: 9 }],
    [16, { type: "attempt-finished", subTaskId: "b", attempt: 2, result: result() }],
    [16, { type: "sub-task-evaluated", subTaskId: "b", attempt: 2, entry }],
    [16, { type: "sub-task-completed", subTaskId: "b", attempts: 2, entry }],
    [16, { type: "sub-task-started", subTaskId: "c", attempt: 1, promptTokens: 9 }],
    [
      17,
      {
        type: "provider-limited",
        key: "openai/gpt-5",
        provider: "openai",
        limit: quota,
        subTaskId: "c",
        attempt: 1,
        waitMs: 0,
        reason: `openai says its quota is exhausted: ${quota.message}`,
        stops: true,
      },
    ],
    [17, { type: "attempt-finished", subTaskId: "c", attempt: 1, result: result(quota) }],
    [
      17,
      {
        type: "sub-task-failed",
        subTaskId: "c",
        attempts: 1,
        reason: `openai says its quota is exhausted: ${quota.message}`,
        code: "provider-limit",
      },
    ],
  ];
  return records.map(([at, record], seq) => ({
    v: runLogVersion,
    runId,
    seq,
    time: second(at),
    ...record,
  }));
}

/** Writes the rate-limited run's log into `store`, as `FileRunStore` would. */
export async function storeLimitedRun(store: string, runId = "limited-run"): Promise<void> {
  const lines = limitedRunRecords(runId).map((record) => JSON.stringify(record));
  await writeFile(join(store, `${runId}.jsonl`), `${lines.join("\n")}\n`);
}
