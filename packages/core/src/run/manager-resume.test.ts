import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { InvalidRequestError, RunNotFoundError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { Evaluator } from "../ports/evaluator.js";
import type { AttemptProcess } from "../ports/executor.js";
import { MemoryRunStore } from "../store/run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import { createManager } from "./manager.js";

// a -> b -> d, a -> c -> d, e alone; b is cut off once and retried.
const plan = {
  subTasks: [task("a"), task("b", ["a"]), task("c", ["a"]), task("d", ["b", "c"]), task("e")],
};
const script = () => ({
  a: [{ type: "success" as const, text: "out a" }],
  b: [{ type: "truncated" as const }, { type: "success" as const, text: "out b" }],
  c: [{ type: "success" as const, text: "out c" }],
  d: [{ type: "success" as const, text: "out d" }],
  e: [{ type: "success" as const, text: "out e" }],
});

/** A store holding the first `count` records of `records`: the log a `kill -9` leaves. */
function crashedStore(runId: string, records: readonly RunEvent[], count: number): MemoryRunStore {
  const store = new MemoryRunStore();
  for (const record of records.slice(0, count)) void store.append(runId, record);
  return store;
}

const summary = (report: {
  status: string;
  subTasks: { id: string; status: string; outputData: string }[];
}) => ({
  status: report.status,
  subTasks: report.subTasks.map((s) => [s.id, s.status, s.outputData]),
});

describe("Manager.resume", () => {
  it("after a crash at every record of a run, finishes with the uninterrupted run's report", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ script: script() });
    const reference = await createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-1",
      concurrency: 1,
    }).run("x", { plan });
    const records = await store.read("run-1");
    expect(reference.status).toBe("completed");

    for (let cut = 1; cut < records.length; cut++) {
      const crashed = crashedStore("run-1", records, cut);
      const replayed = new Set(
        records
          .slice(0, cut)
          .flatMap((r) => (r.type === "sub-task-completed" ? [r.subTaskId] : [])),
      );
      const resumed = createFakeExecutor({
        script: ({ subTaskId }) => {
          if (replayed.has(subTaskId))
            throw new Error(`${subTaskId} completed before the crash but ran again`);
          const outputs: Record<string, string> = {
            a: "out a",
            b: "out b",
            c: "out c",
            d: "out d",
            e: "out e",
          };
          return { type: "success", text: outputs[subTaskId] ?? "?" };
        },
      });
      const report = await createManager({
        cwd: process.cwd(),
        executor: resumed,
        store: crashed,
        concurrency: 1,
      }).resume("run-1", { plan }).result;
      expect(summary(report), `crash after record ${cut} (${records[cut - 1]?.type})`).toEqual(
        summary(reference),
      );
      const log = await crashed.read("run-1");
      // Sequence numbers go on from the log's (agent events take numbers but are not stored).
      expect(log.every((r, i) => i === 0 || r.seq > log[i - 1]!.seq)).toBe(true);
      const completedTwice = ["a", "b", "c", "d", "e"].filter(
        (id) =>
          log.filter((r) => r.type === "sub-task-completed" && r.subTaskId === id).length !== 1,
      );
      expect(completedTwice, `crash after record ${cut}`).toEqual([]);
      // Attempt numbers only grow: no (sub-task, attempt) pair is started twice.
      const starts = log.flatMap((r) =>
        r.type === "sub-task-started" ? [`${r.subTaskId}#${r.attempt}`] : [],
      );
      expect(new Set(starts).size).toBe(starts.length);
    }
  });

  it("after a crash at every record of a run with a replan, keeps the replan and finishes the same", async () => {
    const replanPlan = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] };
    const replacement = { subTasks: [task("b1", ["a"]), task("c1", ["b1"])] };
    const parts = () => ({
      model: createScriptedModel({
        responses: Array.from({ length: 3 }, () => ({ object: replacement })),
      }),
      executor: createFakeExecutor({
        script: ({ subTaskId }) =>
          subTaskId === "b" ? { type: "error" } : { type: "success", text: `out ${subTaskId}` },
      }),
    });
    const store = new MemoryRunStore();
    const reference = await createManager({
      cwd: process.cwd(),
      ...parts(),
      store,
      createRunId: () => "run-r",
      maxRetries: 0,
      concurrency: 1,
    }).run("x", { plan: replanPlan });
    expect(summary(reference).subTasks).toEqual([
      ["a", "completed", "out a"],
      ["b", "replaced", ""],
      ["c", "replaced", ""],
      ["b1", "completed", "out b1"],
      ["c1", "completed", "out c1"],
    ]);
    const records = await store.read("run-r");
    for (let cut = 1; cut < records.length; cut++) {
      const crashed = crashedStore("run-r", records, cut);
      const report = await createManager({
        cwd: process.cwd(),
        ...parts(),
        store: crashed,
        maxRetries: 0,
        concurrency: 1,
      }).resume("run-r", { plan: replanPlan }).result;
      expect(summary(report), `crash after record ${cut} (${records[cut - 1]?.type})`).toEqual(
        summary(reference),
      );
      const log = await crashed.read("run-r");
      expect(
        log.filter((r) => r.type === "plan-revised"),
        `crash after record ${cut}`,
      ).toHaveLength(1);
    }
  });

  it("re-runs an interrupted attempt under the next number and tells it what happened", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ script: { a: [{ type: "hang" }] } });
    const controller = new AbortController();
    const first = createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-2",
    }).start("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: controller.signal,
    });
    first.on("sub-task-started", () => setTimeout(() => controller.abort(), 5));
    await first.result;
    // Drop what the cancel wrote after the attempt started: as if the process had died then.
    const records = await store.read("run-2");
    const cut = records.findIndex((r) => r.type === "sub-task-started") + 1;
    const processes: AttemptProcess[] = [{ pid: 999_999, startTime: "42" }];
    const crashed = crashedStore(
      "run-2",
      [
        ...records.slice(0, cut),
        {
          ...records[0]!,
          type: "attempt-process",
          subTaskId: "a",
          attempt: 1,
          ...processes[0]!,
          seq: cut,
        },
      ],
      cut + 1,
    );
    const reclaimed: AttemptProcess[][] = [];
    const second = createFakeExecutor({ script: { a: [{ type: "success", text: "done" }] } });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: Object.assign(second, {
        reclaim: async (p: readonly AttemptProcess[]) => void reclaimed.push([...p]),
      }),
      store: crashed,
    }).resume("run-2", { onEvent: (e) => events.push(e) }).result;
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 2 });
    expect(second.calls[0]?.attempt).toBe(2);
    expect(second.calls[0]?.prompt).toContain("Attempt 1 was interrupted before it finished");
    expect(reclaimed).toEqual([processes]);
    expect(events[0]).toMatchObject({
      type: "run-resumed",
      interrupted: [{ subTaskId: "a", attempt: 1 }],
      reclaimed: 1,
    });
  });

  it("does not count an interrupted attempt against the sub-task's retries", async () => {
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const first = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ script: { a: [{ type: "hang" }] } }),
      store,
      createRunId: () => "run-2b",
      maxRetries: 1,
    }).start("x", { plan: { subTasks: [task("a")] }, abortSignal: controller.signal });
    first.on("sub-task-started", () => setTimeout(() => controller.abort(), 5));
    await first.result;
    const records = await store.read("run-2b");
    const crashed = crashedStore(
      "run-2b",
      records,
      records.findIndex((r) => r.type === "sub-task-started") + 1,
    );
    // With one retry: attempt 2 is cut off and retried, attempt 3 completes.
    const second = createFakeExecutor({
      script: { a: [{ type: "truncated" }, { type: "success", text: "done" }] },
    });
    const report = await createManager({
      cwd: process.cwd(),
      executor: second,
      store: crashed,
      replan: { enabled: false },
    }).resume("run-2b").result;
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 3 });
    expect(second.calls.map((c) => c.attempt)).toEqual([2, 3]);
  });

  it("judges an attempt that finished before the crash instead of running it again", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ script: { a: [{ type: "success", text: "the work" }] } });
    await createManager({ cwd: process.cwd(), executor, store, createRunId: () => "run-3" }).run(
      "x",
      {
        plan: { subTasks: [task("a")] },
      },
    );
    const records = await store.read("run-3");
    const cut = records.findIndex((r) => r.type === "attempt-finished") + 1;
    const judged: string[] = [];
    const evaluator: Evaluator = {
      async evaluate({ result, attempt }) {
        judged.push(`${attempt}:${result.finalText}`);
        return {
          completed: true,
          summary: "ok",
          outputData: result.finalText,
          feedback: "",
          evidence: [],
          usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
        };
      },
    };
    const idle = createFakeExecutor();
    const report = await createManager({
      cwd: process.cwd(),
      executor: idle,
      evaluator,
      store: crashedStore("run-3", records, cut),
    }).resume("run-3").result;
    expect(idle.calls).toHaveLength(0);
    expect(judged).toEqual(["1:the work"]);
    expect(report.subTasks[0]).toMatchObject({
      status: "completed",
      attempts: 1,
      outputData: "the work",
    });
  });

  it("keeps the token budget spent before the crash", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({
      fallback: { type: "success", usage: { inputTokens: 600, outputTokens: 100 } },
    });
    const chain = { subTasks: [task("a"), task("b", ["a"]), task("c", ["b"])] };
    await createManager({ cwd: process.cwd(), executor, store, createRunId: () => "run-4" }).run(
      "x",
      { plan: chain },
    );
    const records = await store.read("run-4");
    const cut = records.findIndex((r) => r.type === "sub-task-completed") + 1;
    const resumed = createFakeExecutor({
      fallback: { type: "success", usage: { inputTokens: 600, outputTokens: 100 } },
    });
    // The run keeps the settings it logged; a budget given to `resume` is laid over them.
    const report = await createManager({
      cwd: process.cwd(),
      executor: resumed,
      store: crashedStore("run-4", records, cut),
    }).resume("run-4", { settings: { budget: { maxTokens: 1000 } } }).result;
    // 700 before the crash, 700 after: over 1000, so c never starts.
    expect(resumed.calls.map((c) => c.subTaskId)).toEqual(["b"]);
    expect(report.usage.agents.inputTokens).toBe(1200);
    expect(report.reason).toContain("token budget of 1000");
  });

  it("re-plans a run that crashed during planning, and returns a finished run's report as it is", async () => {
    const store = new MemoryRunStore();
    const request = "Plan the work, then do it and also check it.";
    const crashed = createScriptedModel({ responses: [{ error: new Error("process killed") }] });
    await createManager({
      cwd: process.cwd(),
      model: crashed,
      executor: createFakeExecutor(),
      store,
      createRunId: () => "run-5",
    })
      .run(request)
      .catch(() => {});
    const model = createScriptedModel({ responses: [{ object: { subTasks: [task("a")] } }] });
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const manager = createManager({ cwd: process.cwd(), model, executor, store });
    const report = await manager.resume("run-5").result;
    expect(report).toMatchObject({ runId: "run-5", request, status: "completed" });
    const again = await manager.resume("run-5").result;
    expect(again).toEqual(report);
    expect(executor.calls).toHaveLength(1);
  });

  it("refuses an unknown run and a run already running in this manager", async () => {
    const store = new MemoryRunStore();
    const executor = createFakeExecutor({ fallback: { type: "hang" } });
    const manager = createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-6",
    });
    await expect(manager.resume("nope").result).rejects.toSatisfy(RunNotFoundError.isInstance);
    const controller = new AbortController();
    const running = manager.start("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: controller.signal,
    });
    expect(() => manager.resume("run-6")).toThrowError(InvalidRequestError);
    controller.abort();
    await running.result;
  });

  it("takes up a cancelled run where it stopped", async () => {
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const first = createFakeExecutor({
      script: { a: [{ type: "success", text: "out a" }], b: [{ type: "hang" }] },
    });
    const cancelled = createManager({
      cwd: process.cwd(),
      executor: first,
      store,
      createRunId: () => "run-c",
    }).start("x", {
      plan: { subTasks: [task("a"), task("b", ["a"])] },
      abortSignal: controller.signal,
    });
    cancelled.on("sub-task-started", (e) => {
      if (e.subTaskId === "b") setTimeout(() => controller.abort(), 5);
    });
    expect((await cancelled.result).status).toBe("cancelled");
    const second = createFakeExecutor({ script: { b: [{ type: "success", text: "out b" }] } });
    const report = await createManager({ cwd: process.cwd(), executor: second, store }).resume(
      "run-c",
    ).result;
    expect(summary(report)).toEqual({
      status: "completed",
      subTasks: [
        ["a", "completed", "out a"],
        ["b", "completed", "out b"],
      ],
    });
    expect(second.calls.map((c) => [c.subTaskId, c.attempt])).toEqual([["b", 2]]);
  });
});
