import { join } from "node:path";
import { FileRunStore, type RunEvent, type TaskLedgerInput } from "@taskledger/core";
import { subTaskOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { processesUnder, scriptedCodex, testScratch } from "../test-support/cli-harness.js";
import { createManager } from "./create-manager.js";

const plan: TaskLedgerInput = {
  subTasks: ["alpha", "bad", "gamma"].map((id) => ({
    id,
    title: `Step ${id}`,
    description: `Say that step ${id} is done.`,
    successCriteria: [`the agent says step ${id} is done`],
    dependsOn: [],
  })),
};

const scratch = testScratch("all");

// The manager's handling of an agent's failed provider is the subject, not the agent: a real agent,
// Codex, one native binary (docs/testing.md).
describe("the agent's provider failing for one sub-task, on a real agent (Codex)", () => {
  it("reports partial: that sub-task failed with its agent's error, the two independent ones completed", async () => {
    const server = await scratch.server({
      replies: (request) =>
        subTaskOf(request) === "bad"
          ? // A short retry-after keeps Codex's own retry quick.
            { status: 500, headers: { "retry-after-ms": "10", "retry-after": "0" } }
          : { text: `Step ${subTaskOf(request) ?? "?"} is done.` },
    });
    const root = await scratch.directory("agent-fault-");
    const { cwd, executor } = await scriptedCodex(server, root, 1);
    const events: RunEvent[] = [];
    const store = new FileRunStore(join(root, "store"));
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      store,
      concurrency: 3,
      maxRetries: 1,
    }).run("Do three independent steps", { plan, cwd, onEvent: (event) => events.push(event) });

    expect(report.status).toBe("partial");
    const byId = Object.fromEntries(report.subTasks.map((s) => [s.id, s]));
    expect(byId.alpha).toMatchObject({ status: "completed", attempts: 1 });
    expect(byId.gamma).toMatchObject({ status: "completed", attempts: 1 });
    expect(byId.bad).toMatchObject({ status: "failed", attempts: 2 });
    // The error the agent reported for its provider is the sub-task's reason, word for word.
    const failed = events.flatMap((e) =>
      e.type === "attempt-finished" && e.subTaskId === "bad" ? [e.result.error ?? ""] : [],
    );
    expect(failed).toHaveLength(2);
    expect(failed[1]).not.toBe("");
    expect(byId.bad?.reason).toContain(`ended with an error. Error: ${failed[1]}`);
    // Every call of the failing sub-task was answered 500; the others never saw one.
    const agentCalls = server.requests.map(subTaskOf);
    expect(agentCalls.filter((id) => id === "alpha")).toHaveLength(1);
    expect(agentCalls.filter((id) => id === "gamma")).toHaveLength(1);
    expect(agentCalls.filter((id) => id === "bad").length).toBeGreaterThanOrEqual(2);
    // The failure stayed in its sub-task: no other sub-task's record mentions the error.
    const others = events.filter(
      (e) => "subTaskId" in e && e.subTaskId !== "bad" && e.type !== "agent-event",
    );
    expect(JSON.stringify(others)).not.toMatch(/HTTP 500|status 500|statusCode":500/);
    // No record lost: every event announced (but the agents' own stream) is in the log, in order.
    const announced = events.filter((e) => e.type !== "agent-event");
    expect(await store.read(report.runId)).toEqual(JSON.parse(JSON.stringify(announced)));
    expect(announced.at(-1)?.type).toBe("run-finished");
    expect(await processesUnder(root)).toEqual([]);
  }, 150_000);
});
