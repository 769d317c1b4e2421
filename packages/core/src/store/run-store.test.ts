import { describe, expect, it } from "vitest";
import type { RunEvent } from "../log/run-events.js";
import { MemoryRunStore } from "./run-store.js";

const record = (runId: string, type: "run-started" | "run-finished"): RunEvent =>
  (type === "run-started"
    ? { type, request: "r", cwd: "/", runId, seq: 0, time: "t" }
    : { type, runId, seq: 1, time: "t", report: {} }) as RunEvent;

describe("MemoryRunStore", () => {
  it("forgets the oldest finished runs past maxRuns and never a running one", async () => {
    const store = new MemoryRunStore({ maxRuns: 2 });
    await store.append("running", record("running", "run-started"));
    await store.append("done-1", record("done-1", "run-started"));
    await store.append("done-1", record("done-1", "run-finished"));
    await store.append("new", record("new", "run-started"));
    expect(await store.read("done-1")).toEqual([]);
    expect(await store.read("running")).toHaveLength(1);
    expect(await store.read("new")).toHaveLength(1);
  });
});
