import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../log/run-events.js";
import type { Executor } from "../ports/executor.js";
import { createManager } from "../run/manager.js";
import type { ManagerOptions } from "../run/manager-options.js";
import { MemoryRunStore } from "../store/run-store.js";
import { finishedResult, memoryWorkspaces, of } from "../test-support/memory-workspaces.js";
import { task } from "../test-support/sub-task-fixture.js";
import { addUsage } from "../usage/usage.js";

describe("bestOf at its edges: scope, budgets, diffs, siblings, crashes", () => {
  it("after a crash mid-round, the replaced candidate and its killed session's tokens stay in the report", async () => {
    const onePlan = { subTasks: [task("hard", [], { risky: true })] };
    // What a kill -9 leaves: the log as it was once candidate 1 ended a step (700 tokens) and
    // candidate 2 was judged; candidate 1 never reported its end.
    let left: RunEvent[] | undefined;
    let taken = () => {};
    const snapshot = new Promise<void>((resolve) => {
      taken = resolve;
    });
    class WatchedStore extends MemoryRunStore {
      override async append(runId: string, record: RunEvent): Promise<void> {
        await super.append(runId, record);
        const records = await this.read(runId);
        const stepOf1 = records.some((r) => r.type === "attempt-step" && r.attempt === 1);
        const judged2 = records.some((r) => r.type === "sub-task-evaluated" && r.attempt === 2);
        if (!left && stepOf1 && judged2) {
          left = records;
          taken();
        }
      }
    }
    const step = { inputTokens: 700, outputTokens: 7 };
    const first: Executor = {
      async run(_prompt, { attempt, onEvent, abortSignal }) {
        if (attempt === 1) {
          onEvent?.({ type: "step-finish", reason: "tool-calls", usage: addUsage(step) });
          await new Promise((resolve) => abortSignal.addEventListener("abort", resolve));
        }
        return finishedResult();
      },
    };
    const abort = new AbortController();
    const options = (store: MemoryRunStore, executor: Executor): ManagerOptions => ({
      cwd: process.cwd(),
      executor,
      store,
      workspaces: memoryWorkspaces().provider,
      bestOf: 2,
      project: false,
      createRunId: () => "run-1",
    });
    const run = createManager(options(new WatchedStore(), first)).run("x", {
      plan: onePlan,
      abortSignal: abort.signal,
    });
    await snapshot;
    abort.abort();
    await run;
    const crashed = new MemoryRunStore();
    for (const r of left!) await crashed.append("run-1", r);
    const again: Executor = { run: async () => finishedResult() };
    const report = await createManager(options(crashed, again)).resume("run-1").result;
    expect(report.status).toBe("completed");
    const [round] = report.subTasks[0]!.candidates!;
    expect(round!.candidates.map((c) => [c.attempt, c.replacedBy])).toEqual([
      [1, 3],
      [2, undefined],
      [3, undefined],
    ]);
    expect(round!.candidates[0]).toMatchObject({
      completed: false,
      lost: expect.stringMatching(/^Interrupted/),
      usage: { inputTokens: 700, outputTokens: 7 },
    });
    // The killed session's tokens count in the run's and the round's totals.
    expect(report.usage.agents.inputTokens).toBe(700);
    expect(round!.extraUsage.inputTokens).toBeGreaterThanOrEqual(700);
  });

  it("siblings first, then candidates: an extra candidate waits for a sibling dispatched with it", async () => {
    // `easy`'s worktree is ready only once `hard`'s first candidate is with the executor.
    let firstCandidateRuns = () => {};
    const firstCandidate = new Promise<void>((resolve) => {
      firstCandidateRuns = resolve;
    });
    const { provider } = memoryWorkspaces((id) =>
      id === "easy" ? firstCandidate : Promise.resolve(),
    );
    const order: string[] = [];
    const executor: Executor = {
      async run(_prompt, { subTask, attempt, candidate }) {
        // A candidate is named as such, so an executor with few seats serves siblings first.
        order.push(`${subTask.id}@${attempt}${candidate ? ` (round ${candidate.round})` : ""}`);
        if (subTask.id === "hard" && attempt === 1) firstCandidateRuns();
        return finishedResult();
      },
    };
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      workspaces: provider,
      bestOf: 3,
      project: false,
      concurrency: 2,
    }).run("x", { plan: { subTasks: [task("hard", [], { risky: true }), task("easy")] } });
    expect(report.status).toBe("completed");
    expect(order).toEqual(["hard@1 (round 1)", "easy@1", "hard@2 (round 1)", "hard@3 (round 1)"]);
  });

  it('for: "all" gives every sub-task a round, risky or not', async () => {
    const { provider, merged } = memoryWorkspaces();
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      workspaces: provider,
      bestOf: { candidates: 2, for: "all" },
      project: false,
    }).run("x", {
      plan: { subTasks: [task("a"), task("b", ["a"])] },
      onEvent: (e) => records.push(e),
    });
    expect(report.status).toBe("completed");
    expect(of(records, "candidates-started").map((e) => [e.subTaskId, e.reason])).toEqual([
      ["a", "all"],
      ["b", "all"],
    ]);
    // No model: two complete candidates are chosen by the tie rule, the first started.
    expect(of(records, "candidates-chosen").map((e) => [e.winner, e.by])).toEqual([
      [1, "rule"],
      [1, "rule"],
    ]);
    expect(merged).toEqual(["a@1", "b@1"]);
  });

  it("a budget spent mid-round starts no further candidate; the choice is made among those that ran", async () => {
    // `easy` is dispatched with `hard`, so hard's extra candidates wait for it; its worktree is
    // ready once hard's first candidate has spent the whole budget.
    let spent = () => {};
    const budgetGone = new Promise<void>((resolve) => {
      spent = resolve;
    });
    const { provider, merged } = memoryWorkspaces((id) =>
      id === "easy" ? budgetGone : Promise.resolve(),
    );
    const executor = createFakeExecutor({
      fallback: { type: "success", text: "done", usage: { inputTokens: 5000 } },
    });
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor,
      workspaces: provider,
      bestOf: 3,
      budget: { maxTokens: 1000 },
      project: false,
      concurrency: 2,
    }).run("x", {
      plan: { subTasks: [task("hard", [], { risky: true }), task("easy")] },
      onEvent: (e) => {
        records.push(e);
        if (e.type === "attempt-finished" && e.subTaskId === "hard") spent();
      },
    });
    expect(executor.calls.map((c) => `${c.subTaskId}@${c.attempt}`)).toEqual(["hard@1", "easy@1"]);
    const [chosen] = of(records, "candidates-chosen");
    expect(chosen).toMatchObject({ winner: 1, by: "single" });
    expect(chosen!.candidates.map((c) => [c.attempt, c.lost])).toEqual([
      [1, undefined],
      [2, "It did not run: the run stopped starting work."],
      [3, "It did not run: the run stopped starting work."],
    ]);
    expect(merged).toContain("hard@1");
    expect(report.subTasks.find((s) => s.id === "hard")?.status).toBe("completed");
  });

  it("an unreadable diff is shown as such to the judge, which still chooses", async () => {
    const { provider, merged } = memoryWorkspaces(undefined, (commit) => commit === "hard@1");
    const model = createScriptedModel({
      responses: [{ object: { winner: 2, reasons: "2 shows its change.", losers: [] } }],
    });
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      workspaces: provider,
      bestOf: 2,
      project: false,
    }).run("x", { plan: { subTasks: [task("hard", [], { risky: true })] } });
    const prompt = JSON.stringify(model.calls[0]?.messages);
    expect(prompt).toContain("(the change could not be read: bad object hard@1)");
    expect(prompt).toContain("+ the work of hard@2");
    expect(report.subTasks[0]!.candidates![0]).toMatchObject({ winner: 2, by: "judge" });
    expect(merged).toEqual(["hard@2"]);
  });
});
