import { getEventListeners } from "node:events";
import { setImmediate as nextTurn } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { RunReport, TaskLedgerInput, TaskRun } from "@taskledger/core";
import { createFakeExecutor } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createManager } from "./create-manager.js";

// vitest's config is shared by every package, so this file turns on `gc` for itself.
setFlagsFromString("--expose-gc");
const gc = (globalThis.gc ?? runInNewContext("gc")) as () => void;

const runs = 50;

const plan: TaskLedgerInput = {
  subTasks: [
    { id: "a", title: "A", description: "Do A.", successCriteria: ["A"], dependsOn: [] },
    { id: "b", title: "B", description: "Do B.", successCriteria: ["B"], dependsOn: ["a"] },
    { id: "c", title: "C", description: "Do C.", successCriteria: ["C"], dependsOn: [] },
  ],
};

function resourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo())
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** Resource kinds of which more are active now than in `baseline`, with how many more. */
function grownSince(baseline: Map<string, number>): Record<string, number> {
  const grown: Record<string, number> = {};
  for (const [kind, count] of resourceCounts()) {
    const extra = count - (baseline.get(kind) ?? 0);
    if (extra > 0) grown[kind] = extra;
  }
  return grown;
}

async function collectGarbage(): Promise<number> {
  for (let round = 0; round < 3; round++) {
    gc();
    await nextTurn();
  }
  return process.memoryUsage().heapUsed;
}

describe("50 runs in one process at once (fake executor)", () => {
  it("all finish; no timer, handle or abort listener is left; the runs are collected", async () => {
    // One run first, so code compiled and modules loaded on first use are not counted as retained.
    await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success" } }),
    }).run("Warm up", { plan });
    const heapBefore = await collectGarbage();
    const resourcesBefore = resourceCounts();
    const controller = new AbortController();
    let listenersSeen = 0;
    const collected = new Set<string>();
    const registry = new FinalizationRegistry<string>((label) => collected.add(label));

    // Everything that holds the runs lives in this function, so after it returns only leaks do.
    const finish = async () => {
      const executor = createFakeExecutor({
        // A delay puts a timer and an abort listener in every attempt: the things that could leak.
        // Each answer is its own 20 kB, so 50 runs' reports and records weigh megabytes while held.
        script: ({ prompt }) => ({
          type: "success",
          text: Buffer.alloc(20_000, prompt.slice(0, 80)).toString(),
          delayMs: 5,
        }),
      });
      const manager = createManager({
        cwd: process.cwd(),
        executor,
        concurrency: 2,
        maxRetries: 0,
      });
      const started: TaskRun[] = [];
      for (let index = 0; index < runs; index++) {
        const run = manager.start(`Request ${index}`, { plan, abortSignal: controller.signal });
        run.on("sub-task-started", () => {
          listenersSeen = Math.max(
            listenersSeen,
            getEventListeners(controller.signal, "abort").length,
          );
        });
        registry.register(run, `run ${index}`);
        started.push(run);
      }
      // Half are read as async iterables, the others only awaited.
      const iterated = started.slice(0, runs / 2).map(async (run) => {
        let count = 0;
        for await (const _ of run) count++;
        return count;
      });
      const reports: RunReport[] = await Promise.all(started.map((run) => run.result));
      for (const [index, report] of reports.entries()) registry.register(report, `report ${index}`);
      return {
        statuses: reports.map((report) => report.status),
        eventCounts: await Promise.all(iterated),
        attempts: executor.calls.length,
        heapHeld: await collectGarbage(),
      };
    };
    const outcome = await finish();

    expect(outcome.statuses).toEqual(Array(runs).fill("completed"));
    expect(outcome.attempts).toBe(runs * plan.subTasks.length);
    expect(outcome.eventCounts.every((count) => count >= 8)).toBe(true);
    // Runs did hang listeners on the host's signal while they ran, and took every one away.
    expect(listenersSeen).toBeGreaterThan(0);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);

    const heapAfter = await collectGarbage();
    for (let round = 0; round < 20 && collected.size < runs * 2; round++) await collectGarbage();
    expect(collected.size).toBe(runs * 2);
    expect(grownSince(resourcesBefore)).toEqual({});
    // Back near the baseline: most of what the finished runs held is gone.
    const held = outcome.heapHeld - heapBefore;
    expect(held).toBeGreaterThan(3 * 1024 * 1024);
    expect(heapAfter - heapBefore).toBeLessThan(held / 4);
  });
});
