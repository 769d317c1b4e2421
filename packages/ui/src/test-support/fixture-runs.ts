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
