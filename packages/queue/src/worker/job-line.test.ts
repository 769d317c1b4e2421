import { describe, expect, it } from "vitest";
import { jobLine } from "./job-line.js";

describe("the worker's line for a job", () => {
  it("says a rate-limited end's provider and when the queue resumes", () => {
    const limit = { kind: "rate-limit" as const, provider: "openai", message: "429" };
    expect(jobLine({ type: "started", jobId: "r.a.1" })).toBe("started r.a.1");
    expect(jobLine({ type: "finished", jobId: "r.a.1", outcome: "finished" })).toBe(
      "finished r.a.1: finished",
    );
    expect(
      jobLine({
        type: "finished",
        jobId: "r.a.1",
        outcome: "rate-limited",
        limit,
        pausedForMs: 1500,
      }),
    ).toBe("finished r.a.1: rate-limited (openai, resuming in 2 s)");
    expect(
      jobLine({
        type: "finished",
        jobId: "r.a.1",
        outcome: "rate-limited",
        limit: { ...limit, kind: "quota" },
      }),
    ).toBe("finished r.a.1: rate-limited (openai, quota spent, the queue goes on)");
  });
});
