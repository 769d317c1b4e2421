import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { outcomeEvaluator } from "../attempt/outcome-evaluator.js";
import { InvalidConfigError, InvalidRequestError, PlanValidationError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { EvaluationInput, Evaluator } from "../ports/evaluator.js";
import type { LanguageModel } from "../ports/model.js";
import { MemoryRunStore } from "../store/run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import { createManager } from "./manager.js";

describe("what a run checks before it spends anything", () => {
  it("refuses a working directory that does not exist or is a file, before any model call", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taskledger-cwd-"));
    const file = join(dir, "a-file");
    await writeFile(file, "x");
    for (const cwd of [join(dir, "missing"), file]) {
      const model = createScriptedModel({ responses: [] });
      const store = new MemoryRunStore();
      const error = await createManager({ model, executor: createFakeExecutor(), store, cwd })
        .run("Port this project from Python 2 to Python 3 and also test it")
        .catch((e: unknown) => e);
      expect(InvalidConfigError.isInstance(error), String(error)).toBe(true);
      expect((error as Error).message).toContain(cwd);
      expect(model.calls).toHaveLength(0);
      expect(await store.read((error as InvalidConfigError).runId ?? "")).toEqual([]);
    }
  });

  it("refuses to start a run under the id of one already in the store, and leaves its log alone", async () => {
    const store = new MemoryRunStore();
    const manager = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor(),
      store,
      createRunId: () => "same-id",
    });
    await manager.run("x", { plan: { subTasks: [task("a")] } });
    const before = await store.read("same-id");
    const error = await manager
      .run("x", { plan: { subTasks: [task("a")] } })
      .catch((e: unknown) => e);
    expect(InvalidRequestError.isInstance(error)).toBe(true);
    expect(await store.read("same-id")).toEqual(before);
  });
});

describe("typed ends", () => {
  it("an error raised inside a run carries its run id", async () => {
    const error = await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor(),
      createRunId: () => "r-9",
    })
      .run("x", { plan: { subTasks: [task("a", ["nope"])] } })
      .catch((e: unknown) => e);
    expect(PlanValidationError.isInstance(error)).toBe(true);
    expect((error as PlanValidationError).runId).toBe("r-9");
  });

  it("an abort with a custom reason while planning ends in a cancelled report", async () => {
    const controller = new AbortController();
    const model: LanguageModel = {
      provider: "host",
      modelId: "slow",
      generate: ({ abortSignal }) =>
        new Promise((_, reject) => {
          abortSignal?.addEventListener("abort", () => reject(abortSignal.reason), { once: true });
          setTimeout(() => controller.abort(new Error("user closed the window")), 10);
        }),
    };
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor(),
      decompose: "always",
    }).run("Plan this and then do it", { abortSignal: controller.signal });
    expect(report.status).toBe("cancelled");
  });
});

describe("stuck detection across a restart", () => {
  it("the evaluator of a resumed run is given the fingerprint the log kept", async () => {
    const seen: EvaluationInput["previous"][] = [];
    const fingerprinting: Evaluator = {
      async evaluate(input, options) {
        seen.push(input.previous);
        const entry = await outcomeEvaluator.evaluate(input, options);
        return { ...entry, fingerprint: `fp-${input.attempt}` };
      },
    };
    const store = new MemoryRunStore();
    const records: RunEvent[] = [];
    await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "truncated" } }),
      evaluator: fingerprinting,
      store,
      createRunId: () => "r-stuck",
      maxRetries: 2,
      replan: { enabled: false },
    }).run("x", { plan: { subTasks: [task("a")] } });
    records.push(...(await store.read("r-stuck")));
    // Crash right after the first retry was announced; a new manager (and evaluator) resumes.
    const cut = records.findIndex((r) => r.type === "sub-task-retrying") + 1;
    const crashed = new MemoryRunStore();
    for (const record of records.slice(0, cut)) await crashed.append("r-stuck", record);
    seen.length = 0;
    await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "truncated" } }),
      evaluator: fingerprinting,
      store: crashed,
    }).resume("r-stuck").result;
    expect(seen[0]).toEqual({ attempt: 1, fingerprint: "fp-1" });
  });
});

describe("processes a check starts", () => {
  it("are put under the executor's guard while the evaluator runs them", async () => {
    const guarded: number[] = [];
    const released: number[] = [];
    const executor = Object.assign(createFakeExecutor({ fallback: { type: "success" } }), {
      guard: (process: { pid: number }) => {
        guarded.push(process.pid);
        return () => released.push(process.pid);
      },
    });
    const evaluator: Evaluator = {
      async evaluate(input, { abortSignal, guardProcess }) {
        // As a command check does: one process group, guarded from its spawn to its end.
        guardProcess?.({ pid: 4242, startTime: "" })();
        return outcomeEvaluator.evaluate(input, { abortSignal });
      },
    };
    const report = await createManager({ cwd: process.cwd(), executor, evaluator }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(report.status).toBe("completed");
    expect(guarded).toEqual([4242]);
    expect(released).toEqual([4242]);
  });
});

describe("what a run warms while it plans", () => {
  // The executor's `warm` counts, per run: how many servers it is asked to have ready, in turn.
  const warmed = async (
    subTasks: ReturnType<typeof task>[],
    extra: { concurrency: number; reviewPlan?: boolean; plannerMs?: number },
  ) => {
    const counts: number[] = [];
    const base = createFakeExecutor({ fallback: { type: "success" } });
    const executor = {
      run: base.run.bind(base),
      warm: (input: { count: number }) => void counts.push(input.count),
    };
    // With `plannerMs`, a planner that answers after that long; else the host's plan.
    const model =
      extra.plannerMs === undefined
        ? undefined
        : createScriptedModel({ responses: [{ object: { subTasks }, delayMs: extra.plannerMs }] });
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      concurrency: extra.concurrency,
      ...(model ? { model } : {}),
      ...(extra.reviewPlan ? { reviewPlan: () => ({ action: "approve" as const }) } : {}),
    }).run(
      "Build the parser, then write its tests and finally document it in the README.",
      model ? {} : { plan: { subTasks } },
    );
    expect(report.status).toBe("completed");
    return counts;
  };

  it("a host's plan: as many as its first wave has sub-tasks, at most the concurrency", async () => {
    expect(await warmed([task("a")], { concurrency: 4 })).toEqual([1]);
    expect(await warmed([task("a"), task("b"), task("c", ["a"])], { concurrency: 4 })).toEqual([2]);
    expect(await warmed([task("a"), task("b"), task("c")], { concurrency: 2 })).toEqual([2]);
  });

  it("a plan a review may still change: one, then its first wave once it is made", async () => {
    expect(await warmed([task("a")], { concurrency: 4, reviewPlan: true })).toEqual([1]);
    const wide = [task("a"), task("b"), task("c"), task("d", ["a"])];
    expect(await warmed(wide, { concurrency: 4, reviewPlan: true })).toEqual([1, 3]);
  });

  it("a planner's plan: one while it plans, then its first wave; a slow planner's time warms the concurrency", async () => {
    const wide = [task("a"), task("b"), task("c", ["a"])];
    expect(await warmed([task("a")], { concurrency: 4, plannerMs: 0 })).toEqual([1]);
    expect(await warmed(wide, { concurrency: 4, plannerMs: 0 })).toEqual([1, 2]);
    expect(await warmed(wide, { concurrency: 4, plannerMs: 2500 })).toEqual([1, 4]);
  });
});
