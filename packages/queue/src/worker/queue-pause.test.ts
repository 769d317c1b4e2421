import type { ProviderLimit } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { attemptResult } from "../test-support/queue-fixtures.js";
import { QueuePause } from "./queue-pause.js";

const limitedBy = (limit: ProviderLimit) => ({ ...attemptResult("rate-limited"), limit });
const overloaded: ProviderLimit = { kind: "overloaded", statusCode: 529, message: "Overloaded" };

/** A worker whose queue's limit is what the pauses set (and `ttl` before them). */
function fakeWorker(ttl = 0) {
  const set: number[] = [];
  const worker = {
    rateLimit: async (ms: number) => {
      set.push(ms);
    },
    backend: { getRateLimitTtl: async () => ttl },
  } as unknown as ConstructorParameters<typeof QueuePause>[0];
  return { worker, set };
}

describe("the queue's pause on a provider's limit", () => {
  it("waits the provider's Retry-After when it gave one", async () => {
    const { worker, set } = fakeWorker();
    const pause = new QueuePause(worker);
    expect(
      await pause.after(limitedBy({ ...overloaded, kind: "rate-limit", retryAfterMs: 7000 })),
    ).toBe(7000);
    expect(set).toEqual([7000]);
  });

  it("backs off 2 s doubling to 60 s for limits in a row, ±50%, and starts over after another ending", async () => {
    const { worker, set } = fakeWorker();
    // The jitter's extremes: half, then one and a half times the step.
    const draws = [0, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
    const pause = new QueuePause(worker, () => draws.shift() ?? 0.5);
    for (let i = 0; i < 8; i++) await pause.after(limitedBy(overloaded));
    expect(set).toEqual([1000, 6000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    await pause.after(attemptResult("finished"));
    await pause.after(limitedBy(overloaded));
    expect(set.at(-1)).toBe(2000);
  });

  it("does not pause on a spent quota, nor on any other ending", async () => {
    const { worker, set } = fakeWorker();
    const pause = new QueuePause(worker);
    const quota: ProviderLimit = { kind: "quota", message: "insufficient_quota" };
    expect(await pause.after(limitedBy(quota))).toBeUndefined();
    expect(await pause.after(attemptResult("error"))).toBeUndefined();
    expect(set).toEqual([]);
  });

  it("leaves a longer pause another worker set", async () => {
    const { worker, set } = fakeWorker(20_000);
    const pause = new QueuePause(worker);
    expect(await pause.after(limitedBy({ ...overloaded, retryAfterMs: 3000 }))).toBe(20_000);
    expect(set).toEqual([]);
  });
});
