import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { StoreError, UnsupportedLogVersionError } from "../errors/errors.js";
import { createManager } from "../run/manager.js";
import { MemoryRunStore } from "../store/run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import type { RunEvent } from "./run-events.js";
import { recoverRun } from "./run-recovery.js";

const fixtures = join(import.meta.dirname, "fixtures");
const readLog = (name: string) =>
  readFileSync(join(fixtures, name), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);

/** The state as it can be compared: the live-only activity left out. */
function comparable(state: ReturnType<typeof recoverRun> | undefined) {
  if (!state) return state;
  return {
    ...state,
    subTasks: [...state.subTasks].map(([id, s]) => [id, { ...s, activity: "" }]),
  };
}

// A retry (b, cut off once), an alternate model (b again) and a replan (b → b1, c → c1).
const plan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"]), task("d")] };
const replacement = { subTasks: [task("b1", ["a"]), task("c1", ["b1"])] };
const escalatedStatuses = [
  ["a", "completed"],
  ["b", "replaced"],
  ["c", "replaced"],
  ["d", "completed"],
  ["b1", "completed"],
  ["c1", "completed"],
];
function escalatingRun(store: MemoryRunStore) {
  return createManager({
    cwd: process.cwd(),
    model: createScriptedModel({ responses: [{ object: replacement }] }),
    executor: createFakeExecutor({
      script: {
        a: [{ type: "success", text: "out a" }],
        b: [{ type: "truncated" }, { type: "truncated" }, { type: "truncated" }],
        b1: [{ type: "truncated" }, { type: "success", text: "out b1" }],
        c1: [{ type: "success", text: "out c1" }],
        d: [{ type: "success", text: "out d" }],
      },
    }),
    store,
    createRunId: () => "run-fold",
    maxRetries: 1,
    concurrency: 1,
    alternateAgentModels: ["alt/model"],
  }).start("Build the thing", { plan });
}

describe("one fold for the live run and recovery", () => {
  it("recovering the log after every record gives the state the live run had then", async () => {
    const store = new MemoryRunStore();
    const run = escalatingRun(store);
    const live = new Map<number, unknown>();
    run.on("*", (event) => {
      if (event.type !== "agent-event") live.set(event.seq, comparable(run.snapshot()));
    });
    const report = await run.result;
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual(escalatedStatuses);
    const records = await store.read("run-fold");
    expect(records.map((r) => r.type)).toEqual(
      expect.arrayContaining(["sub-task-retrying", "sub-task-escalated", "plan-revised"]),
    );
    expect(live.size).toBe(records.length);
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      expect(
        comparable(recoverRun(records.slice(0, i + 1))),
        `after ${record.type} #${record.seq}`,
      ).toEqual(live.get(record.seq));
    }
  });

  it("every record carries the log format version", async () => {
    const store = new MemoryRunStore();
    await escalatingRun(store).result;
    const records = await store.read("run-fold");
    expect(records.every((r) => r.v === 2)).toBe(true);
    expect(records[0]).toMatchObject({
      type: "run-started",
      settings: { maxRetries: 1, concurrency: 1 },
    });
  });
});

describe("logs written by earlier versions", () => {
  it("a finished format-1 run resumes to its own report", async () => {
    const records = readLog("v1-finished-run.jsonl");
    const store = new MemoryRunStore();
    for (const record of records) await store.append("v1-run", record);
    const report = await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor(),
      store,
    }).resume("v1-run").result;
    expect(report).toEqual((records.at(-1) as { report: unknown }).report);
  });

  for (const [name, firstRun] of [
    ["v1-interrupted-on-alternate.jsonl", "b"],
    ["v1-evaluated-after-replan.jsonl", "b1"],
  ] as const) {
    it(`${name} resumes and finishes like the run that wrote it`, async () => {
      const store = new MemoryRunStore();
      for (const record of readLog(name)) await store.append("v1-run", record);
      const executor = createFakeExecutor({
        script: ({ subTaskId }) =>
          subTaskId === "b" ? { type: "truncated" } : { type: "success", text: `out ${subTaskId}` },
      });
      const report = await createManager({
        cwd: process.cwd(),
        model: createScriptedModel({ responses: [{ object: replacement }] }),
        executor,
        store,
        alternateAgentModels: ["alt/model"],
        maxRetries: 1,
        concurrency: 1,
      }).resume("v1-run", { cwd: fixtures }).result;
      expect(report.subTasks.map((s) => [s.id, s.status])).toEqual(escalatedStatuses);
      expect(executor.calls[0]?.subTaskId).toBe(firstRun);
      const log = await store.read("v1-run");
      const starts = log.flatMap((r) =>
        r.type === "sub-task-started" ? [`${r.subTaskId}#${r.attempt}`] : [],
      );
      expect(new Set(starts).size).toBe(starts.length);
    });
  }

  it("v2-cost-budget-traced.jsonl (a money budget, a trace context) resumes to the same stop", async () => {
    const records = readLog("v2-cost-budget-traced.jsonl");
    const state = recoverRun(records, "v2-run");
    expect(state.budgetStop).toEqual({ kind: "cost", limit: 1, used: 1.5 });
    expect(state.usage.agents.costUsd).toBe(1.5);
    const first = records[0];
    expect(first?.type === "run-started" && first.trace?.spanId).toBe("b7ad6b7169203331");
    const store = new MemoryRunStore();
    for (const record of records) await store.append("v2-run", record);
    const executor = createFakeExecutor();
    const report = await createManager({ cwd: process.cwd(), executor, store }).resume("v2-run", {
      cwd: fixtures,
    }).result;
    expect(executor.calls).toEqual([]);
    expect(report.reason).toBe("Stopped: the cost budget of $1 was reached ($1.5000 spent).");
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
      ["a", "completed"],
      ["b", "completed"],
      ["c", "skipped"],
    ]);
  });

  it("a log of an unknown future version is a typed error naming it", async () => {
    const records = readLog("v1-finished-run.jsonl").map((r, i) => (i === 3 ? { ...r, v: 99 } : r));
    expect(() => recoverRun(records, "v1-run")).toThrow(UnsupportedLogVersionError);
    const store = new MemoryRunStore();
    for (const record of records) await store.append("v1-run", record);
    const error = await createManager({ cwd: process.cwd(), executor: createFakeExecutor(), store })
      .resume("v1-run")
      .result.catch((e: unknown) => e);
    expect(UnsupportedLogVersionError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain("99");
  });

  it("a log without its first record is a typed error, not a run somewhere else", () => {
    const records = readLog("v1-finished-run.jsonl").slice(1);
    expect(() => recoverRun(records, "v1-run")).toThrow(StoreError);
  });

  it("keeps every fixture readable", () => {
    for (const name of readdirSync(fixtures)) expect(() => recoverRun(readLog(name))).not.toThrow();
  });
});
