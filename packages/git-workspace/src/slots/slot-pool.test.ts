import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, watch, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import {
  emptyUsage,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  type RunEvent,
  type SlotPreparation,
} from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { cleanRepository } from "../clean-repository.js";
import { listRunRefs } from "../git/run-refs.js";
import { gitWorkspaces } from "../git-workspaces.js";
import {
  createManager,
  makeRepo,
  onlyFreeSlotsLeft,
  scriptedWorkExecutor,
  sh,
  task,
  userState,
  writeFiles,
} from "../test-support/git-repo.js";
import { poolDirectory } from "./slot-pool.js";

// The setup counts its runs in a file beside the repository: a rerun is seen, wherever it ran.
const countingSetup = (repo: string) =>
  `echo run >> ${repo}.setups; mkdir -p build; echo ok > build/out`;
const setups = (repo: string) =>
  existsSync(`${repo}.setups`) ? readFileSync(`${repo}.setups`, "utf8").split("\n").length - 1 : 0;

function project(): string {
  const repo = makeRepo({
    ".gitignore": "node_modules/\nbuild/\n*.log\n",
    "package-lock.json": "{}\n",
  });
  writeFiles(repo, { "node_modules/dep/index.js": "module.exports = 1;\n" });
  return repo;
}

/** A planner whose plan is the independent sub-tasks `ids`, after `ms`. */
function slowPlanner(ids: string[], ms: number): LanguageModel {
  return {
    provider: "test",
    modelId: "planner",
    async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
      await new Promise((r) => setTimeout(r, ms));
      const ledger = { subTasks: ids.map((id) => task(id)) };
      return {
        text: JSON.stringify(ledger),
        object: request.output?.schema.parse(ledger) as T,
        usage: emptyUsage(),
        finishReason: "stop",
      };
    },
  };
}

/** Runs independent sub-tasks `ids` at concurrency `ids.length`; each attempt records its worktree. */
async function runOnce(
  repo: string,
  ids: string[],
  hold?: Promise<void>,
  arrived?: () => void,
  concurrency = ids.length,
  // The plan from a planner that answers after this long, not the host's: a run whose planner
  // takes over 1.5 s readies `concurrency` slots while it waits.
  plannerMs?: number,
) {
  const seen = new Map<string, string>();
  const executor = scriptedWorkExecutor(
    Object.fromEntries(
      ids.map((id) => [
        id,
        async (cwd: string) => {
          // What an earlier run's attempt left must not be here.
          seen.set(id, readdirSync(cwd).sort().join(","));
          writeFiles(cwd, { [`${id}.txt`]: `${id}\n`, [`scratch-${id}.log`]: "left behind\n" });
          arrived?.();
          await hold;
          return undefined;
        },
      ]),
    ),
  );
  const events: RunEvent[] = [];
  const manager = createManager({
    executor,
    cwd: repo,
    concurrency,
    replan: { enabled: false },
    workspaces: gitWorkspaces({ setup: countingSetup(repo) }),
    ...(plannerMs === undefined ? {} : { model: slowPlanner(ids, plannerMs) }),
  });
  const report = await manager.run("x", {
    ...(plannerMs === undefined ? { plan: { subTasks: ids.map((id) => task(id)) } } : {}),
    onEvent: (event) => {
      events.push(event);
      if (process.env.DEBUG_POOL) console.log(event.type, JSON.stringify(event).slice(0, 300));
    },
  });
  const slots = executor.calls.map((call) => call.cwd);
  const preparations = events.flatMap((e) =>
    e.type === "slot-prepared" ? [e.preparation as SlotPreparation] : [],
  );
  return { report, slots, seen, preparations };
}

describe("worktree slots outlive a run", () => {
  it("a second run starts in the first run's slots: no new worktree, no setup again, nothing of the first run's files", async () => {
    const repo = project();
    const first = await runOnce(repo, ["a", "b"]);
    expect(first.report.status).toBe("completed");
    expect(setups(repo)).toBe(2);
    const kept = await onlyFreeSlotsLeft(repo, first.report.runId);
    expect(kept.sort()).toEqual([...first.slots].sort());

    sh(repo, "clean", "-qfd"); // the applied change is the user's to keep or drop
    const second = await runOnce(repo, ["c", "d"]);
    expect(second.report.status).toBe("completed");
    expect(setups(repo)).toBe(2);
    expect([...second.slots].sort()).toEqual([...first.slots].sort());
    expect(second.preparations.map((p) => p.reason)).toEqual(["reused", "reused"]);
    for (const listing of second.seen.values()) {
      expect(listing).not.toMatch(/scratch-|a\.txt|b\.txt/);
      expect(listing).toMatch(/node_modules/);
      expect(listing).toMatch(/build/);
    }
    expect(await onlyFreeSlotsLeft(repo, second.report.runId)).toHaveLength(2);
  });

  it("a run's first attempt takes the slot the last run's attempt worked in (its agent server is warm there)", async () => {
    const repo = project();
    // At concurrency 3 a run whose planner takes a while readies more slots than its one attempt uses.
    const first = await runOnce(repo, ["a"], undefined, undefined, 3, 1700);
    expect(first.report.status).toBe("completed");
    expect((await onlyFreeSlotsLeft(repo, first.report.runId)).length).toBeGreaterThan(1);
    sh(repo, "clean", "-qfd");
    const second = await runOnce(repo, ["b"], undefined, undefined, 3);
    expect(second.report.status).toBe("completed");
    expect(second.slots).toEqual(first.slots);
    sh(repo, "clean", "-qfd");
    const third = await runOnce(repo, ["c"], undefined, undefined, 3);
    expect(third.slots).toEqual(first.slots);
  });

  it("a host's plan that nothing changes first readies only its first wave's slots", async () => {
    const repo = project();
    const run = await runOnce(repo, ["a"], undefined, undefined, 3);
    expect(run.report.status).toBe("completed");
    expect(await onlyFreeSlotsLeft(repo, run.report.runId)).toHaveLength(1);
  });

  it("two runs at once never share a slot", async () => {
    const repo = project();
    await runOnce(repo, ["warm"]);
    let release!: () => void;
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Both runs' attempts are in flight, each in its slot, before either may finish.
    let inFlight = 0;
    let allIn!: () => void;
    const allArrived = new Promise<void>((r) => {
      allIn = r;
    });
    const arrived = () => {
      if (++inFlight === 4) allIn();
    };
    const one = runOnce(repo, ["a", "b"], hold, arrived);
    const two = runOnce(repo, ["c", "d"], hold, arrived);
    await allArrived;
    const pool = await poolDirectory(repo);
    expect(readdirSync(pool).filter((f) => f.endsWith(".lock"))).toHaveLength(4);
    release();
    const [a, b] = await Promise.all([one, two]);
    expect(a.report.status).toBe("completed");
    expect(b.report.status).toBe("completed");
    const all = [...a.slots, ...b.slots];
    expect(new Set(all).size).toBe(4);
    // The one warm slot went to one of them; three were made.
    expect(await onlyFreeSlotsLeft(repo, a.report.runId)).toHaveLength(4);
  });

  it("slots held by a dead process are taken over, reset to the new attempt's start", async () => {
    const repo = project();
    const first = await runOnce(repo, ["a"]);
    const [slot] = first.slots;
    const top = sh(slot!, "rev-parse", "--show-toplevel");
    const pool = await poolDirectory(repo);
    const name = relative(pool, top);
    // What a `kill -9` leaves: the lock names a process that is gone, and the attempt's files.
    const dead = spawnSync("true").pid;
    writeFileSync(join(pool, `${name}.lock`), JSON.stringify({ pid: dead, runId: "dead-run" }));
    writeFiles(top, { "half-done.txt": "from the dead run\n", "build/junk": "x\n" });
    const second = await runOnce(repo, ["b"]);
    expect(second.report.status).toBe("completed");
    expect(second.slots).toEqual([slot]);
    expect(second.seen.get("b")).not.toMatch(/half-done/);
    expect(await onlyFreeSlotsLeft(repo, second.report.runId)).toHaveLength(1);
  });

  it("the first slot's setup runs while the planner thinks, and the first wave's slots are ready before their attempts", async () => {
    const repo = project();
    const mark = `${repo}.setup-began`;
    const planning = `${repo}.planning`;
    let sawSetup = false;
    // The planner thinks until the setup has begun, and the setup until the planner has: only
    // when both run at once does each see the other (the setup gives up after 10 s).
    const model: LanguageModel = {
      provider: "test",
      modelId: "planner",
      async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
        writeFileSync(planning, "");
        await fileAppears(mark);
        sawSetup = existsSync(mark);
        const ledger = { subTasks: [task("a"), task("b"), task("c")] };
        return {
          text: JSON.stringify(ledger),
          object: request.output?.schema.parse(ledger) as T,
          usage: emptyUsage(),
          finishReason: "stop",
        };
      },
    };
    // The three attempts run at once: each waits for the others to start.
    let started = 0;
    let allStarted!: () => void;
    const three = new Promise<void>((r) => {
      allStarted = r;
    });
    const together = async () => {
      if (++started === 3) allStarted();
      await three;
      return undefined;
    };
    const executor = scriptedWorkExecutor({ a: together, b: together, c: together });
    const events: RunEvent[] = [];
    const manager = createManager({
      executor,
      model,
      cwd: repo,
      concurrency: 3,
      replan: { enabled: false },
      workspaces: gitWorkspaces({
        // Only the first slot's setup waits: the later ones come after the plan anyway.
        setup: `if [ ! -e ${mark} ]; then touch ${mark}; for i in $(seq 100); do [ -e ${planning} ] && break; sleep 0.1; done; [ -e ${planning} ] && touch ${repo}.overlapped; fi; mkdir -p build`,
      }),
    });
    const report = await manager.run("three things", { onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    expect(sawSetup).toBe(true);
    expect(existsSync(`${repo}.overlapped`)).toBe(true);
    // Three slots for three attempts at once: each prepared before its attempt asked for it.
    const types = events.map((e) =>
      e.type === "slot-prepared" ? `slot-${e.preparation.slot}` : e.type,
    );
    expect(types.filter((t) => t.startsWith("slot-")).sort()).toEqual([
      "slot-1",
      "slot-2",
      "slot-3",
    ]);
    expect(new Set(executor.calls.map((c) => c.cwd)).size).toBe(3);
  });

  it("kept slots are bounded: past maxSlots the least recently used go", async () => {
    const repo = project();
    const executor = scriptedWorkExecutor({});
    const manager = createManager({
      executor,
      cwd: repo,
      concurrency: 3,
      replan: { enabled: false },
      workspaces: gitWorkspaces({ slots: { maxSlots: 1 } }),
    });
    const report = await manager.run("x", {
      plan: { subTasks: [task("a"), task("b"), task("c")] },
    });
    expect(report.status).toBe("completed");
    expect(await onlyFreeSlotsLeft(repo, report.runId)).toHaveLength(1);
    // The two it removed at once are gone from git too: the repository and the one kept slot.
    expect(sh(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(2);
    expect(() => gitWorkspaces({ slots: { maxSlots: -1 } })).toThrow(/slots\.maxSlots/);
  });

  it("cleaning removes every slot and the ended runs' refs, and leaves the user's repository as it was", async () => {
    const repo = project();
    const before = {
      worktrees: sh(repo, "worktree", "list", "--porcelain"),
      refs: sh(repo, "for-each-ref"),
    };
    const first = await runOnce(repo, ["a", "b"]);
    sh(repo, "clean", "-qfd");
    const state = userState(repo);
    expect((await listRunRefs(repo)).map((run) => run.runId)).toEqual([first.report.runId]);

    const dry = await cleanRepository({ cwd: repo, dryRun: true });
    expect(dry.slots.removed).toHaveLength(2);
    expect(existsSync(dry.slots.removed[0]!.path)).toBe(true);
    const cleaned = await cleanRepository({ cwd: repo });
    expect(cleaned.slots.removed).toHaveLength(2);
    expect(cleaned.runs.removed.map((run) => run.runId)).toEqual([first.report.runId]);
    expect(sh(repo, "worktree", "list", "--porcelain")).toBe(before.worktrees);
    // The run's branch stays: the user's to delete.
    expect(sh(repo, "for-each-ref", "--format=%(refname)")).toBe(
      [
        ...before.refs.split("\n").map((line) => line.split("\t")[1]),
        `refs/heads/taskledger/${first.report.runId}`,
      ]
        .sort()
        .join("\n"),
    );
    expect(userState(repo)).toBe(state);
    expect(readdirSync(await poolDirectory(repo)).filter((f) => f.startsWith("slot-"))).toEqual([]);
  });
});

/** Resolves once `path` exists: told by the file system, not found by polling. */
function fileAppears(path: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dirname(path), () => {
      if (!existsSync(path)) return;
      watcher.close();
      resolve();
    });
    if (existsSync(path)) {
      watcher.close();
      resolve();
    }
  });
}
