import type { Executor } from "@taskledger/core";
import { createFakeExecutor } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { type JobAgentSettings, WarmExecutors } from "./warm-executors.js";

/** Executors made per settings, each telling whether it was closed. */
function maker() {
  const made: { settings: JobAgentSettings; closed: boolean; executor: Executor }[] = [];
  const make = (settings: JobAgentSettings): Executor => {
    const entry = { settings, closed: false, executor: createFakeExecutor() as Executor };
    entry.executor.close = async () => {
      entry.closed = true;
    };
    made.push(entry);
    return entry.executor;
  };
  return { made, make };
}

describe("a worker's warm executors", () => {
  it("jobs with the same agent settings share one executor; other settings get their own", () => {
    const { made, make } = maker();
    const warm = new WarmExecutors(make);
    const first = warm.acquire({ agentModel: "p/a" });
    first.release();
    const second = warm.acquire({ agentModel: "p/a" });
    second.release();
    const other = warm.acquire({ agentModel: "claude-code:sonnet" });
    other.release();
    const none = warm.acquire({});
    none.release();
    expect(second.executor).toBe(first.executor);
    expect(other.executor).not.toBe(first.executor);
    expect(made.map((entry) => entry.settings)).toEqual([
      { agentModel: "p/a" },
      { agentModel: "claude-code:sonnet" },
      {},
    ]);
    expect(made.some((entry) => entry.closed)).toBe(false);
  });

  it("past the bound the least recently used idle executor is closed; a busy one never is", () => {
    const { made, make } = maker();
    const warm = new WarmExecutors(make, 2);
    const busy = warm.acquire({ agentModel: "p/a" });
    warm.acquire({ agentModel: "p/b" }).release();
    // p/a is the oldest but runs a job: p/b goes instead.
    warm.acquire({ agentModel: "p/c" }).release();
    expect(made.map((entry) => entry.closed)).toEqual([false, true, false]);
    expect(warm.size).toBe(2);
    busy.release();
    // Used again, p/c is the most recent: p/a, now idle and oldest, goes for p/d.
    warm.acquire({ agentModel: "p/c" }).release();
    warm.acquire({ agentModel: "p/d" }).release();
    expect(made.map((entry) => entry.closed)).toEqual([true, true, false, false]);
  });

  it("more settings at once than the bound: every job gets its executor, the extra closed once idle", () => {
    const { made, make } = maker();
    const warm = new WarmExecutors(make, 1);
    const a = warm.acquire({ agentModel: "p/a" });
    const b = warm.acquire({ agentModel: "p/b" });
    expect(warm.size).toBe(2);
    a.release();
    a.release();
    expect(made.map((entry) => entry.closed)).toEqual([true, false]);
    b.release();
    expect(warm.size).toBe(1);
  });

  it("closing closes every executor and takes no job after", async () => {
    const { made, make } = maker();
    const warm = new WarmExecutors(make);
    warm.acquire({ agentModel: "p/a" }).release();
    warm.acquire({ agentModel: "p/b" });
    await warm.close();
    expect(made.map((entry) => entry.closed)).toEqual([true, true]);
    expect(() => warm.acquire({ agentModel: "p/a" })).toThrow(/closed/);
  });
});
