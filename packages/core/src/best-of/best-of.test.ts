import { createFakeExecutor, createScriptedModel, type FakeAttempt } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { InvalidConfigError } from "../errors/errors.js";
import { acceptanceSchemaName } from "../integration/acceptance.js";
import type { RunEvent } from "../log/run-events.js";
import type { WorkspaceProvider } from "../ports/workspace.js";
import { createManager } from "../run/manager.js";
import type { ManagerOptions } from "../run/manager-options.js";
import { MemoryRunStore } from "../store/run-store.js";
import { memoryWorkspaces, of } from "../test-support/memory-workspaces.js";
import { task } from "../test-support/sub-task-fixture.js";
import { candidateChoiceSchemaName } from "./candidate-judge.js";

const plan = {
  subTasks: [task("hard", [], { risky: true }), task("easy"), task("after", ["hard"])],
};
// Candidates of `hard` are attempts 1–3: 1 is cut off, 2 and 3 finish; the judge takes 3.
const script = ({ subTaskId, attempt }: { subTaskId: string; attempt: number }): FakeAttempt =>
  subTaskId === "hard" && attempt === 1
    ? { type: "truncated" }
    : { type: "success", text: `${subTaskId} ${attempt} done, as the sub-task asks` };
const judgeAnswer = {
  object: { winner: 3, reasons: "3 is right.", losers: [{ attempt: 2, why: "2 is weaker." }] },
};

describe("bestOf in the manager", () => {
  it("gives a risky sub-task a round of candidates from one commit and merges only the chosen one", async () => {
    const { provider, merged, kept } = memoryWorkspaces();
    const model = createScriptedModel({ responses: [judgeAnswer] });
    const executor = createFakeExecutor({ script });
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor,
      workspaces: provider,
      bestOf: 3,
      project: false,
    }).run("x", { plan, onEvent: (e) => records.push(e) });
    expect(report.status).toBe("completed");
    const [started] = of(records, "candidates-started");
    expect(started).toMatchObject({
      subTaskId: "hard",
      round: 1,
      reason: "risky",
      candidates: [{ attempt: 1 }, { attempt: 2 }, { attempt: 3 }],
    });
    const starts = of(records, "sub-task-started").filter((e) => e.subTaskId === "hard");
    expect(starts.map((e) => [e.attempt, e.candidate?.round, e.from])).toEqual([
      [1, 1, started!.from],
      [2, 1, started!.from],
      [3, 1, started!.from],
    ]);
    // Only the risky one gets candidates; the one choice call is the only model call but the
    // acceptance judge's at the end.
    expect(executor.calls.filter((c) => c.subTaskId === "easy")).toHaveLength(1);
    expect(model.calls.map((c) => c.output?.name)).toEqual([
      candidateChoiceSchemaName,
      acceptanceSchemaName,
    ]);
    expect(merged).toContain("hard@3");
    expect(merged).not.toContain("hard@2");
    expect(kept).toEqual(
      [1, 2, 3].map((n) => expect.stringMatching(new RegExp(`/attempts/hard/${n}$`))),
    );
    const hard = report.subTasks.find((s) => s.id === "hard")!;
    expect(hard.candidates).toEqual([
      expect.objectContaining({
        round: 1,
        reason: "risky",
        winner: 3,
        by: "judge",
        why: "3 is right.",
        candidates: [
          expect.objectContaining({
            attempt: 1,
            completed: false,
            lost: expect.stringMatching(/^Incomplete: /),
          }),
          expect.objectContaining({ attempt: 2, completed: true, lost: "2 is weaker." }),
          expect.objectContaining({ attempt: 3, completed: true, commit: "hard@3" }),
        ],
      }),
    ]);
    expect(hard.candidates![0]!.candidates[2]!.lost).toBeUndefined();
    // What the round cost beyond its winner: the two others' sessions and the judge's call.
    const extra = hard.candidates![0]!.extraUsage;
    expect(extra.inputTokens).toBe(1000 * 2 + 100);
    expect(report.candidates).toEqual({ rounds: 1, extraUsage: extra });
    // The dependent gets the winner's work.
    const after = of(records, "sub-task-started").find((e) => e.subTaskId === "after");
    expect(after?.from).toBe("merge:hard@3");
  });

  it("a judge that chooses none merges nothing: the round fails and the ladder retries as attempt 4", async () => {
    const { provider, merged } = memoryWorkspaces();
    const none = { object: { winner: null, reasons: "Each one breaks the parser.", losers: [] } };
    const model = createScriptedModel({ responses: [none] });
    const executor = createFakeExecutor({ fallback: { type: "success", text: "done" } });
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      model,
      executor,
      workspaces: provider,
      bestOf: 3,
      project: false,
    }).run("x", {
      plan: { subTasks: [task("hard", [], { risky: true })] },
      onEvent: (e) => records.push(e),
    });
    const [chosen] = of(records, "candidates-chosen");
    expect(chosen).toMatchObject({ by: "judge", reason: "Each one breaks the parser." });
    expect(chosen!.winner).toBeUndefined();
    // No candidate of the round is merged; the retry after it is announced and run as attempt 4.
    expect(merged).toEqual(["hard@4"]);
    expect(of(records, "sub-task-retrying")).toEqual([
      expect.objectContaining({
        attempt: 4,
        feedback: expect.stringContaining("Each one breaks the parser."),
      }),
    ]);
    const starts = of(records, "sub-task-started").map((e) => [e.attempt, e.candidate?.round]);
    expect(starts).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, undefined],
    ]);
    // It starts from the round's start, not from a candidate nobody chose.
    const [round] = of(records, "candidates-started");
    expect(of(records, "sub-task-started").at(-1)?.from).toBe(round!.from);
    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 4 });
  });

  it("after a crash at every record of a best-of run, no finished candidate runs again and the choice is made once", async () => {
    const store = new MemoryRunStore();
    const { provider } = memoryWorkspaces();
    await createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [judgeAnswer] }),
      executor: createFakeExecutor({ script }),
      store,
      workspaces: provider,
      bestOf: 3,
      project: false,
      createRunId: () => "run-1",
      concurrency: 1,
    }).run("x", { plan });
    const records = await store.read("run-1");
    for (let cut = 1; cut < records.length; cut++) {
      const crashed = new MemoryRunStore();
      for (const r of records.slice(0, cut)) await crashed.append("run-1", r);
      const before = records.slice(0, cut);
      const finished = new Set(
        of(before, "attempt-finished").map((e) => `${e.subTaskId}@${e.attempt}`),
      );
      const wasChosen = of(before, "candidates-chosen").length > 0;
      const model = createScriptedModel({ responses: [judgeAnswer] });
      const executor = createFakeExecutor({
        script: (call) => {
          if (finished.has(`${call.subTaskId}@${call.attempt}`))
            throw new Error(`${call.subTaskId} attempt ${call.attempt} finished before the crash`);
          // A rerun of a candidate keeps its quality: 3's stand-in is right, 1's is not.
          return script(call);
        },
      });
      const { provider: again } = memoryWorkspaces();
      const report = await createManager({
        cwd: process.cwd(),
        model,
        executor,
        store: crashed,
        workspaces: again,
        bestOf: 3,
        project: false,
        concurrency: 1,
      }).resume("run-1", { plan }).result;
      const where = `crash after record ${cut} (${records[cut - 1]?.type})`;
      expect(report.status, where).toBe("completed");
      const all = await crashed.read("run-1");
      expect(of(all, "candidates-chosen"), where).toHaveLength(1);
      expect(of(all, "candidates-started"), where).toHaveLength(1);
      // The choice is never asked again; the acceptance judge is asked once in the run's life.
      const choices = model.calls.filter((c) => c.output?.name === candidateChoiceSchemaName);
      if (wasChosen) expect(choices, where).toHaveLength(0);
      expect(of(all, "acceptance-judged"), where).toHaveLength(1);
      const numbers = of(all, "sub-task-started")
        .filter((e) => e.subTaskId === "hard")
        .map((e) => e.attempt);
      expect(new Set(numbers).size, where).toBe(numbers.length);
      // No finished candidate is replaced by a rerun.
      for (const e of of(all, "sub-task-started")) {
        const replaced = e.candidate?.replaces;
        if (replaced !== undefined) expect(finished.has(`hard@${replaced}`), where).toBe(false);
      }
    }
  });

  it("after a crash at every record of a round the judge answers none, no candidate is ever merged", async () => {
    const none = { object: { winner: null, reasons: "None adds.", losers: [] } };
    const options = (store: MemoryRunStore, workspaces: WorkspaceProvider): ManagerOptions => ({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [none] }),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      store,
      workspaces,
      bestOf: 2,
      project: false,
      createRunId: () => "run-1",
      concurrency: 1,
    });
    const onePlan = { subTasks: [task("hard", [], { risky: true })] };
    const store = new MemoryRunStore();
    await createManager(options(store, memoryWorkspaces().provider)).run("x", { plan: onePlan });
    const records = await store.read("run-1");
    for (let cut = 1; cut < records.length; cut++) {
      const crashed = new MemoryRunStore();
      for (const r of records.slice(0, cut)) await crashed.append("run-1", r);
      const { provider, merged } = memoryWorkspaces();
      const report = await createManager(options(crashed, provider)).resume("run-1").result;
      const where = `crash after record ${cut} (${records[cut - 1]?.type})`;
      const all = [...records.slice(0, cut), ...(await crashed.read("run-1")).slice(cut)];
      const candidates = new Set(
        of(all, "sub-task-started").flatMap((e) => (e.candidate ? [`hard@${e.attempt}`] : [])),
      );
      expect(report.status, where).toBe("completed");
      expect(merged.length, where).toBeLessThanOrEqual(1);
      for (const commit of merged) expect(candidates.has(commit), where).toBe(false);
      expect(of(all, "candidates-chosen"), where).toHaveLength(1);
    }
  });

  it("a spent budget starts no round: the risky sub-task is skipped, not given candidates", async () => {
    const { provider } = memoryWorkspaces();
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", usage: { inputTokens: 5000 } } }),
      workspaces: provider,
      bestOf: 3,
      budget: { maxTokens: 1000 },
      project: false,
    }).run("x", {
      plan: { subTasks: [task("first"), task("hard", ["first"], { risky: true })] },
      onEvent: (e) => records.push(e),
    });
    expect(of(records, "candidates-started")).toEqual([]);
    expect(report.subTasks.find((s) => s.id === "hard")).toMatchObject({
      status: "skipped",
      attempts: 0,
    });
  });

  it("refuses what it cannot do: more than 8 candidates, an unknown scope, a shared directory", async () => {
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    expect(() => createManager({ cwd: process.cwd(), executor, bestOf: 9 })).toThrow(
      InvalidConfigError,
    );
    expect(() =>
      createManager({
        cwd: process.cwd(),
        executor,
        bestOf: { candidates: 3, for: "some" as "all" },
      }),
    ).toThrow(/bestOf\.for/);
    const run = createManager({
      cwd: process.cwd(),
      executor,
      bestOf: 3,
      isolation: "shared",
    }).run("x", { plan });
    await expect(run).rejects.toSatisfy(InvalidConfigError.isInstance);
    expect(executor.calls).toEqual([]);
  });
});
