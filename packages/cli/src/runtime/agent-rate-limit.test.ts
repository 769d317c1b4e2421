import { join } from "node:path";
import { FileRunStore, type RunEvent, type TaskLedgerInput } from "@taskledger/core";
import { subTaskOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import {
  processesUnder,
  scriptedOpencodeServer,
  testScratch,
} from "../test-support/cli-harness.js";
import { createManager } from "./create-manager.js";

const ids = ["a", "b", "c", "d"];
const plan: TaskLedgerInput = {
  subTasks: ids.map((id) => ({
    id,
    title: `Step ${id}`,
    description: `Say that step ${id} is done.`,
    successCriteria: [`the agent says step ${id} is done`],
    dependsOn: [],
  })),
};
// The window: about 30 s of 429s with `Retry-After: 2` for every agent request.
const windowMs = 30_000;

const scratch = testScratch("all");

describe("the agents' provider over its rate limit for 30 s, four sub-tasks at concurrency 4, on real opencode (the server executor a run has by default)", () => {
  it("completes with one counted attempt per sub-task, no retry or replan, the waits in the report, and fewer requests refused than a fan-out that does not adapt", async () => {
    let closesAt: number | undefined;
    // When each refused request came, by sub-task: an attempt's refusals come close together.
    const refused: { id: string; at: number }[] = [];
    const server = await scratch.server({
      replies: (request) => {
        closesAt ??= Date.now() + windowMs;
        const id = subTaskOf(request) ?? "?";
        if (Date.now() < closesAt) {
          refused.push({ id, at: Date.now() });
          return { status: 429, headers: { "retry-after": "2" } };
        }
        return { text: `Step ${id} is done.` };
      },
    });
    const root = await scratch.directory("agent-rate-limit-");
    const { cwd, executor } = await scriptedOpencodeServer(server, root);
    const events: RunEvent[] = [];
    const store = new FileRunStore(join(root, "store"));
    const started = Date.now();
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      store,
      concurrency: 4,
      maxRetries: 1,
    })
      .run("Do four independent steps", { plan, cwd, onEvent: (event) => events.push(event) })
      .finally(() => executor.close());

    // What happened when, shown when an expectation fails.
    const timeline = events
      .filter((e) => e.type !== "agent-event" && e.type !== "attempt-process")
      .map(
        (e) =>
          `${Date.parse(e.time) - started} ms ${e.type} ${"subTaskId" in e ? e.subTaskId : ""}`,
      )
      .join("\n");
    expect(report.status, `${report.reason}\n${timeline}`).toBe("completed");
    expect(
      report.subTasks.map((s) => [s.id, s.attempts]),
      timeline,
    ).toEqual(ids.map((id) => [id, 1]));
    expect(report.subTasks.every((s) => (s.rateLimited ?? 0) >= 1)).toBe(true);
    const types = new Set(events.map((e) => e.type));
    for (const never of [
      "sub-task-retrying",
      "sub-task-escalated",
      "plan-revised",
      "sub-task-failed",
    ])
      expect(types.has(never as RunEvent["type"]), never).toBe(false);
    // Each limited attempt ended rate-limited with what opencode said, never judged.
    const limitedAttempts = events.filter(
      (e) => e.type === "attempt-finished" && e.result.outcome === "rate-limited",
    );
    expect(limitedAttempts.length).toBe(
      report.subTasks.reduce((n, s) => n + (s.rateLimited ?? 0), 0),
    );
    const evaluated = events.filter((e) => e.type === "sub-task-evaluated");
    expect(evaluated).toHaveLength(4);
    const [provider] = report.providers ?? [];
    expect(provider).toMatchObject({ key: "agent" });
    expect(provider!.rejected).toBe(limitedAttempts.length);
    expect(provider!.waits).toBeGreaterThanOrEqual(1);
    expect(provider!.waitedMs).toBeGreaterThan(0);
    // A fan-out that does not adapt keeps four lanes sending for the whole window: four times
    // what one lane's attempts send. Governed, after the first four attempts one probe at a time.
    const firstAttempt = refused.filter((r) => r.id === "a" && r.at < started + 15_000);
    const perAttempt = Math.max(1, firstAttempt.length);
    const attemptMs = Math.max(
      1000,
      (firstAttempt.at(-1)?.at ?? started) - (firstAttempt[0]?.at ?? started),
    );
    const fanOut = 4 * perAttempt * Math.ceil(windowMs / attemptMs);
    expect(refused.length, `${refused.length} refused, fan-out ${fanOut}`).toBeLessThan(
      fanOut * 0.75,
    );
    expect(await processesUnder(root)).toEqual([]);
  }, 180_000);
});
