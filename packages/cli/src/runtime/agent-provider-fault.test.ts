import { join } from "node:path";
import { FileRunStore, type RunEvent, type TaskLedgerInput } from "@taskledger/core";
import { subTaskOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { processesUnder, scriptedOpencode, testScratch } from "../test-support/cli-harness.js";
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

describe("the agent's provider failing for one sub-task, on the real opencode CLI", () => {
  it("reports partial: that sub-task failed naming the 500, the two independent ones completed", async () => {
    const server = await scratch.server({
      replies: (request) =>
        subTaskOf(request) === "bad"
          ? // A short retry-after keeps opencode's own five retries quick.
            { status: 500, headers: { "retry-after-ms": "10" } }
          : { text: `Step ${subTaskOf(request) ?? "?"} is done.` },
    });
    const root = await scratch.directory("agent-fault-");
    const { cwd, executor } = await scriptedOpencode(server, root);
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
    // The provider's own message and status, as opencode reported them.
    expect(byId.bad?.reason).toMatch(/Error: scripted error 500 \(status 500\)/);
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
