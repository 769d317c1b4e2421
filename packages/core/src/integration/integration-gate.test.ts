import { createFakeExecutor, type FakeAttempt } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { Check } from "../ledger/sub-task.js";
import type { RunEvent } from "../log/run-events.js";
import type { CheckRun, Evaluator } from "../ports/evaluator.js";
import type { WorkspaceProvider } from "../ports/workspace.js";
import { createManager } from "../run/manager.js";
import type { ManagerOptions } from "../run/manager-options.js";
import { MemoryRunStore } from "../store/run-store.js";
import { memoryWorkspaces, of, worksIn } from "../test-support/memory-workspaces.js";
import { passedEntry, task } from "../test-support/sub-task-fixture.js";
import { gateId } from "./integration-gate.js";

const npmTest: Check = { type: "command", argv: ["npm", "test"], timeoutMs: null };

/**
 * The memory workspace, whose gate directories are named after the commit they hold, so the
 * evaluator below can tell which works a check sees.
 */
function gatedWorkspaces(
  conflicts: (works: string[]) => boolean = () => false,
): WorkspaceProvider & { merged: string[] } {
  const { provider, merged } = memoryWorkspaces();
  return {
    merged,
    isolates: true,
    async open(input) {
      const workspace = await provider.open(input);
      // Merges without the gate (`off`, `end`) keep what they hold in the tip's name too.
      let tip = "base";
      const conflicted = { merged: false as const, conflicts: ["same.txt"] };
      return {
        ...workspace,
        async merge(request) {
          if (conflicts(worksIn(`${request.at}>${request.commit}`))) return conflicted;
          return workspace.merge!(request);
        },
        async advance(request) {
          await workspace.advance!(request);
          tip = request.to;
        },
        async integrate({ commit, onMerged, ...rest }) {
          if (conflicts(worksIn(`${tip}>${commit}`))) {
            await onMerged(conflicted);
            return conflicted;
          }
          return workspace.integrate({
            ...rest,
            commit,
            onMerged: (integration) => {
              if (!integration.merged) return onMerged(integration);
              tip = `${tip}>${commit}`;
              return onMerged({ ...integration, merge: tip });
            },
          });
        },
        attempt: (request, signal) =>
          request.subTaskId === gateId
            ? Promise.resolve({
                cwd: `gate:${request.from}`,
                capture: async () => undefined,
                dispose: async () => {},
              })
            : workspace.attempt(request, signal),
      };
    },
  };
}

/**
 * Every attempt passes its own evaluation; a gate check fails when `breaks(works, argv)` says the
 * works merged together break that command. `hold` makes the first gate run wait.
 */
function gateEvaluator(
  breaks: (works: string[], argv: readonly string[]) => boolean,
  hold?: Promise<void>,
) {
  const runs: string[][] = [];
  let evaluated = 0;
  const evaluator: Evaluator & { runs: string[][]; evaluated: () => number } = {
    runs,
    evaluated: () => evaluated,
    async evaluate() {
      evaluated++;
      return passedEntry();
    },
    async runChecks(checks, { cwd }): Promise<CheckRun[]> {
      const works = cwd.startsWith("gate:") ? worksIn(cwd.slice(5)) : [];
      runs.push(works);
      if (runs.length === 1 && hold) await hold;
      return checks.map((check) => {
        const argv = check.type === "command" ? check.argv : [];
        const broken = breaks(works, argv);
        return {
          passed: !broken,
          detail: broken
            ? "exit 1\nSyntaxError: The requested module './lib.js' does not provide an export named 'add'"
            : "exit 0",
        };
      });
    },
  };
  return evaluator;
}

const options = (
  evaluator: Evaluator,
  workspaces: WorkspaceProvider,
  extra: Partial<ManagerOptions> = {},
): ManagerOptions => ({
  cwd: process.cwd(),
  executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
  evaluator,
  workspaces,
  checks: [npmTest],
  project: false,
  concurrency: 4,
  ...extra,
});

describe("the integration gate", () => {
  it("sends back the part whose merge breaks the tip, with the failing output, and retries it from the gated tip", async () => {
    const workspaces = gatedWorkspaces();
    // `calc` built on `add`, which `rename` took away: together they fail, each alone passes.
    const evaluator = gateEvaluator(
      (works) => works.includes("rename@1") && works.includes("calc@1"),
    );
    const executor = createFakeExecutor({
      script: ({ subTaskId }): FakeAttempt => ({
        type: "success",
        text: `${subTaskId} done`,
        delayMs: subTaskId === "calc" ? 30 : 0,
      }),
    });
    const records: RunEvent[] = [];
    const report = await createManager(options(evaluator, workspaces, { executor })).run("x", {
      plan: { subTasks: [task("rename"), task("calc")] },
      onEvent: (e) => records.push(e),
    });
    expect(report.status).toBe("completed");
    const [failed] = of(records, "sub-task-integration-failed");
    expect(failed).toMatchObject({ subTaskId: "calc", attempt: 1, with: ["rename"] });
    expect(failed!.entry.incomplete).toBe("integration");
    expect(failed!.entry.feedback).toContain("npm test");
    // The retry starts from the merged result (rename and its own work) and is told what failed.
    const retry = executor.calls.find((c) => c.subTaskId === "calc" && c.attempt === 2)!;
    expect(retry.prompt).toContain("does not provide an export named 'add'");
    const started = of(records, "sub-task-started").find(
      (e) => e.subTaskId === "calc" && e.attempt === 2,
    );
    expect(worksIn(started!.from!)).toEqual(["rename@1", "calc@1"]);
    // Nothing broken ever landed: every tip the branch moved to passed its check.
    expect(workspaces.merged.sort()).toEqual(["calc@2", "rename@1"]);
    expect(report.integration).toMatchObject({
      mode: "batch",
      failures: [{ subTaskId: "calc", with: ["rename"] }],
      final: { passed: true },
    });
  });

  it("catches a later merge that breaks an earlier sub-task's own command check", async () => {
    const workspaces = gatedWorkspaces();
    const own: Check = { type: "command", argv: ["node", "parser.test.js"], timeoutMs: null };
    const evaluator = gateEvaluator(
      (works, argv) => works.includes("later@1") && argv[1] === "parser.test.js",
    );
    const records: RunEvent[] = [];
    const report = await createManager(options(evaluator, workspaces, { concurrency: 1 })).run(
      "x",
      {
        plan: { subTasks: [task("parser", [], { checks: [own] }), task("later", ["parser"])] },
        onEvent: (e) => records.push(e),
      },
    );
    const [failed] = of(records, "sub-task-integration-failed");
    expect(failed?.subTaskId).toBe("later");
    expect(failed?.entry.feedback).toContain("`node parser.test.js`");
    // Its own check is on every later gate run; `npm test` kept passing.
    const checked = of(records, "integration-checked").find((e) => e.parts.includes("later"));
    expect(checked?.results.map((r) => [r.argv.join(" "), r.passed])).toEqual([
      ["npm test", true],
      ["node parser.test.js", false],
    ]);
    expect(report.status).toBe("completed");
  });

  it("gates a batch of four in one run, bisects it to the part that breaks it, and lands the other three", async () => {
    const workspaces = gatedWorkspaces();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const evaluator = gateEvaluator((works) => works.includes("b@1"), hold);
    // `first` finishes alone; its gate run waits until a, b, c and d are done, so they are one batch.
    const executor = createFakeExecutor({
      script: ({ subTaskId }): FakeAttempt => ({
        type: "success",
        text: `${subTaskId} done`,
        delayMs: subTaskId === "first" ? 0 : 40,
      }),
    });
    const records: RunEvent[] = [];
    const manager = createManager(options(evaluator, workspaces, { executor, concurrency: 5 }));
    const watch = setInterval(() => {
      if (evaluator.evaluated() >= 5) release();
    }, 5);
    const report = await manager
      .run("x", {
        plan: { subTasks: ["first", "a", "b", "c", "d"].map((id) => task(id)) },
        onEvent: (e) => records.push(e),
      })
      .finally(() => clearInterval(watch));
    const runs = of(records, "integration-checked").map((e) => [e.parts.join(","), e.passed]);
    // One run for the batch; bisection: [a,b] fails, [a] passes and lands, [b] is [a,b]'s tree
    // (known, not run again) and goes back, [c,d] passes; then b's fixed attempt.
    expect(runs).toEqual([
      ["first", true],
      ["a,b,c,d", false],
      ["a,b", false],
      ["a", true],
      ["c,d", true],
      ["b", true],
    ]);
    expect(of(records, "sub-task-integration-failed").map((e) => e.subTaskId)).toEqual(["b"]);
    expect(of(records, "sub-task-completed").map((e) => `${e.subTaskId}@${e.attempts}`)).toEqual([
      "first@1",
      "a@1",
      "c@1",
      "d@1",
      "b@2",
    ]);
    expect(report.status).toBe("completed");
    expect(report.integration?.runs).toBe(6);
  });

  it("best of two: a winner whose merge breaks the gate gives way to the runner-up, which lands", async () => {
    const workspaces = gatedWorkspaces();
    const evaluator = gateEvaluator((works) => works.includes("hard@1"));
    const records: RunEvent[] = [];
    const report = await createManager(
      options(evaluator, workspaces, { bestOf: { candidates: 2, for: "all", ladder: false } }),
    ).run("x", { plan: { subTasks: [task("hard")] }, onEvent: (e) => records.push(e) });
    expect(report.status).toBe("completed");
    // The tie rule chose attempt 1; it broke the gate; attempt 2 landed, no attempt 3 ran.
    expect(of(records, "candidates-chosen")[0]?.winner).toBe(1);
    expect(of(records, "candidate-gave-way")).toMatchObject([
      { subTaskId: "hard", round: 1, attempt: 1, winner: 2 },
    ]);
    expect(workspaces.merged).toEqual(["hard@2"]);
    const hard = report.subTasks[0]!;
    expect(hard.attempts).toBe(2);
    expect(hard.candidates?.[0]).toMatchObject({
      winner: 2,
      candidates: [
        { attempt: 1, lost: expect.stringMatching(/could not land/) },
        expect.not.objectContaining({ lost: expect.anything() }),
      ],
    });
  });

  it("shared directory: the checks run in it after each completion, and a failure is the just-finished part's", async () => {
    let gateRuns = 0;
    const evaluator: Evaluator = {
      evaluate: async () => passedEntry(),
      // The second completion leaves the directory broken once; its retry mends it.
      async runChecks(checks) {
        gateRuns++;
        return checks.map(() => ({
          passed: gateRuns !== 2,
          detail: gateRuns !== 2 ? "ok" : "exit 1\nboom",
        }));
      },
    };
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      evaluator,
      checks: [npmTest],
      project: false,
      concurrency: 1,
      isolation: "shared",
    }).run("x", {
      plan: { subTasks: [task("one"), task("two", ["one"])] },
      onEvent: (e) => records.push(e),
    });
    expect(report.status).toBe("completed");
    expect(of(records, "integration-checked").map((e) => [e.parts, e.passed, e.commit])).toEqual([
      [["one"], true, undefined],
      [["two"], false, undefined],
      [["two"], true, undefined],
    ]);
    expect(of(records, "sub-task-integration-failed")).toMatchObject([
      { subTaskId: "two", attempt: 1, with: [] },
    ]);
    expect(report.subTasks.map((s) => [s.id, s.attempts])).toEqual([
      ["one", 1],
      ["two", 2],
    ]);
  });

  it("work waiting at the gate frees its slot: the next sub-task starts meanwhile, and a retry waits for a slot", async () => {
    const workspaces = gatedWorkspaces();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // a's first gate run waits until b has been evaluated: only possible if b got a's slot.
    const evaluator = gateEvaluator((works) => works.includes("a@1"), hold);
    const executor = createFakeExecutor({
      fallback: { type: "success", text: "done", delayMs: 20 },
    });
    const watch = setInterval(() => {
      if (evaluator.evaluated() >= 2) release();
    }, 5);
    const report = await createManager(options(evaluator, workspaces, { executor, concurrency: 1 }))
      .run("x", { plan: { subTasks: [task("a"), task("b")] } })
      .finally(() => clearInterval(watch));
    expect(report.status).toBe("completed");
    expect(executor.calls.map((c) => `${c.subTaskId}@${c.attempt}`)).toEqual(["a@1", "b@1", "a@2"]);
    expect(executor.maxConcurrent).toBe(1);
  });

  it("a part that conflicts only with another part of its batch waits for the next batch: nothing lands unchecked", async () => {
    // q0 and q1 change the same file: either alone merges, the two together conflict.
    const workspaces = gatedWorkspaces(
      (works) =>
        works.includes("q0@1") && works.some((w) => w.startsWith("q1@")) && !works.includes("q1@2"),
    );
    let release!: () => void;
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const evaluator = gateEvaluator(() => false, hold);
    const executor = createFakeExecutor({
      script: ({ subTaskId }): FakeAttempt => ({
        type: "success",
        text: `${subTaskId} done`,
        delayMs: subTaskId === "lead" ? 0 : 40,
      }),
    });
    const watch = setInterval(() => {
      if (evaluator.evaluated() >= 3) release();
    }, 5);
    const records: RunEvent[] = [];
    const report = await createManager(options(evaluator, workspaces, { executor }))
      .run("x", {
        plan: { subTasks: [task("lead"), task("q0"), task("q1")] },
        onEvent: (e) => records.push(e),
      })
      .finally(() => clearInterval(watch));
    expect(report.status).toBe("completed");
    // q1 was gated after q0 landed, against the tip: a conflict there, then its retry landed.
    expect(of(records, "sub-task-conflicted").map((e) => `${e.subTaskId}@${e.attempt}`)).toEqual([
      "q1@1",
    ]);
    const landed = of(records, "sub-task-completed").map((e) => `${e.subTaskId}@${e.attempts}`);
    expect(landed).toEqual(["lead@1", "q0@1", "q1@2"]);
    // Every landing came after a passed check of a result holding it.
    for (const id of ["lead", "q0", "q1"]) {
      const at = records.findIndex((r) => r.type === "sub-task-completed" && r.subTaskId === id);
      expect(
        records
          .slice(0, at)
          .some((r) => r.type === "integration-checked" && r.passed && r.parts.includes(id)),
      ).toBe(true);
    }
  });

  it("with the gate off and no acceptance, lands every completed part as before, unchecked", async () => {
    const workspaces = gatedWorkspaces();
    const evaluator = gateEvaluator(() => true);
    const records: RunEvent[] = [];
    const report = await createManager(
      options(evaluator, workspaces, { integration: "off", acceptance: false }),
    ).run("x", {
      plan: { subTasks: [task("rename"), task("calc")] },
      onEvent: (e) => records.push(e),
    });
    expect(report.status).toBe("completed");
    expect(of(records, "integration-checked")).toEqual([]);
    expect(report.integration).toBeUndefined();
    expect(report.acceptance).toBeUndefined();
  });

  it("`end` checks only the final tip, and a failing one is partial and never applied", async () => {
    const workspaces = gatedWorkspaces();
    const evaluator = gateEvaluator(
      (works) => works.includes("rename@1") && works.includes("calc@1"),
    );
    const records: RunEvent[] = [];
    const report = await createManager(options(evaluator, workspaces, { integration: "end" })).run(
      "x",
      {
        plan: { subTasks: [task("rename"), task("calc")] },
        onEvent: (e) => records.push(e),
      },
    );
    const checked = of(records, "integration-checked");
    expect(checked.map((e) => [e.parts, e.final, e.passed])).toEqual([[[], true, false]]);
    expect(report.status).toBe("partial");
    expect(report.reason).toMatch(/combined result fails npm test/);
    expect(report.integration?.final?.passed).toBe(false);
  });

  it("resumed after a crash between a gate's verdict and the landing, lands without running the gate again", async () => {
    const evaluator = gateEvaluator(() => false);
    const store = new MemoryRunStore();
    const plan = { subTasks: [task("one"), task("two", ["one"])] };
    const reference = await createManager(
      options(evaluator, gatedWorkspaces(), { store, createRunId: () => "run-g" }),
    ).run("x", { plan });
    expect(reference.status).toBe("completed");
    const records = await store.read("run-g");
    const cut = records.findIndex((r) => r.type === "integration-checked" && r.parts[0] === "two");
    const crashed = new MemoryRunStore();
    for (const record of records.slice(0, cut + 1)) await crashed.append("run-g", record);
    const again = gateEvaluator(() => false);
    const resumed = await createManager(
      options(again, gatedWorkspaces(), {
        store: crashed,
        executor: createFakeExecutor(),
      }),
    ).resume("run-g").result;
    expect(resumed.status).toBe("completed");
    // `two` passed its gate before the crash: landed from the log's verdict, no check, no attempt.
    expect(again.runs).toEqual([]);
    const after = (await crashed.read("run-g")).slice(cut + 1);
    expect(of(after, "sub-task-completed").map((e) => e.subTaskId)).toEqual(["two"]);
  });
});
