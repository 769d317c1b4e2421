import { join } from "node:path";
import { createFakeExecutor } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../log/run-events.js";
import { MemoryRunStore } from "../store/run-store.js";
import { task } from "../test-support/sub-task-fixture.js";
import { EventHub } from "./event-hub.js";
import { createManager } from "./manager.js";

const plan = { subTasks: [task("a"), task("b", ["a"])] };

async function collect(iterable: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

describe("a run's events", () => {
  it("reach a for-await loop started after the run began, from its first event", async () => {
    const run = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done", delayMs: 20 } }),
    }).start("x", { plan });
    const heard: RunEvent[] = [];
    run.on("*", (event) => heard.push(event));
    // Late: the run has started and planned before the loop begins.
    await new Promise<void>((resolve) => run.on("sub-task-started", () => resolve()));
    expect(heard.map((e) => e.type)).toContain("plan-created");
    const iterated = await collect(run);
    expect(iterated[0]?.type).toBe("run-started");
    expect(iterated).toEqual(heard);
  });

  it("reach a loop started after the run ended, which then ends", async () => {
    const run = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
    }).start("x", { plan });
    await run.result;
    const types = (await collect(run)).map((e) => e.type);
    expect(types[0]).toBe("run-started");
    expect(types.at(-1)).toBe("run-finished");
  });

  it("reach a loop started late on a resumed run from the run's first event, plan included; listeners hear only the new session", async () => {
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const first = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ script: { a: [{ type: "hang" }] } }),
      store,
    }).start("x", { plan, abortSignal: controller.signal });
    first.on("sub-task-started", () => controller.abort());
    await first.result;
    const heard: RunEvent[] = [];
    const resumed = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      store,
    }).resume(first.runId, { onEvent: (e) => heard.push(e) });
    await resumed.result;
    const types = (await collect(resumed)).map((e) => e.type);
    expect(types[0]).toBe("run-started");
    expect(types).toContain("plan-created");
    expect(types.filter((t) => t === "run-finished")).toHaveLength(2);
    expect(heard[0]?.type).toBe("run-resumed");
  });

  it("a run refused before its first record (no such cwd) still emits run-failed, and writes no log", async () => {
    const store = new MemoryRunStore();
    const heard: RunEvent[] = [];
    const run = createManager({ cwd: process.cwd(), executor: createFakeExecutor(), store }).start(
      "x",
      {
        plan,
        cwd: "/no/such/directory",
        onEvent: (e) => heard.push(e),
      },
    );
    await expect(run.result).rejects.toMatchObject({ code: "invalid-config" });
    expect(heard).toMatchObject([
      { type: "run-failed", runId: run.runId, error: { code: "invalid-config" } },
    ]);
    expect(await store.read(run.runId)).toEqual([]);
  });

  it("a run with no cwd at all is refused (a library never works in its host's directory): run-failed, no log", async () => {
    const store = new MemoryRunStore();
    const heard: RunEvent[] = [];
    const run = createManager({ executor: createFakeExecutor(), store }).start("x", {
      plan,
      onEvent: (e) => heard.push(e),
    });
    const error = await run.result.catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid-config", runId: run.runId });
    expect((error as Error).message).toContain("`cwd` is required");
    expect(heard.map((e) => e.type)).toEqual(["run-failed"]);
    expect(await store.read(run.runId)).toEqual([]);
  });

  it("names a relative cwd that does not exist by its absolute path", async () => {
    const run = createManager({ executor: createFakeExecutor() }).start("x", {
      plan,
      cwd: "no-such-dir",
    });
    await expect(run.result).rejects.toThrow(
      `The working directory ${join(process.cwd(), "no-such-dir")} does not exist.`,
    );
  });

  it("a listener that throws on every event is reported once a run", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const run = createManager({
        cwd: process.cwd(),
        executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      }).start("x", {
        plan,
        onEvent: () => {
          throw new Error("listener bug");
        },
      });
      expect((await run.result).status).toBe("completed");
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.includes("listener bug"))).toHaveLength(1);
  });

  it("replay every state change but only the latest 1,000 agent events", async () => {
    const hub = new EventHub();
    const base = { runId: "r", time: "t", v: 2 } as const;
    let seq = 0;
    hub.emit({ ...base, seq: seq++, type: "run-started", request: "x", cwd: "/tmp" } as RunEvent);
    for (let i = 0; i < 5000; i++) {
      hub.emit({
        ...base,
        seq: seq++,
        type: "agent-event",
        subTaskId: "a",
        attempt: 1,
        event: { type: "text", text: `${i}` },
      } as RunEvent);
    }
    hub.emit({ ...base, seq: seq++, type: "run-finished" } as unknown as RunEvent);
    hub.close();
    const replayed = await collect(hub.iterate());
    expect(replayed).toHaveLength(1002);
    expect(replayed.map((e) => e.seq)).toEqual([
      0,
      ...Array.from({ length: 1000 }, (_, i) => 4001 + i),
      5001,
    ]);
  });
});
