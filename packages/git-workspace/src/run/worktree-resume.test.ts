import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Executor, RunEvent } from "@taskledger/core";
import { emptyUsage, MemoryRunStore } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { runRefs } from "../git/run-refs.js";
import {
  createManager,
  makeRepo,
  onlyFreeSlotsLeft,
  read,
  scriptedWorkExecutor,
  sh,
  task,
  writeFiles,
} from "../test-support/git-repo.js";

/** A store that "dies" at the first record `dieAt` picks: that record and every later one are lost. */
class DyingStore extends MemoryRunStore {
  dead = false;
  constructor(public dieAt: (record: RunEvent) => boolean) {
    super();
  }
  override async append(runId: string, record: RunEvent): Promise<void> {
    if (this.dead || this.dieAt(record)) {
      this.dead = true;
      throw new Error("the process was killed");
    }
    return super.append(runId, record);
  }
}

const plan = { subTasks: [task("a"), task("b", ["a"])] };

function work() {
  return scriptedWorkExecutor({
    a: async (cwd) => {
      writeFiles(cwd, { "lib.txt": "lib\n" });
      return undefined;
    },
    b: async (cwd) => {
      writeFiles(cwd, { "use.txt": `uses ${read(cwd, "lib.txt")}` });
      return undefined;
    },
  });
}

type Point = "mid-attempt" | "before-merge" | "mid-merge";

async function crashAndResume(point: Point) {
  const repo = makeRepo({ "README.md": "hello\n" });
  const dieAt: Record<Point, (r: RunEvent) => boolean> = {
    "mid-attempt": (r) => r.type === "attempt-finished" && r.subTaskId === "a",
    // The merge is made in git before its record: dying at the record leaves it made, unlogged.
    "before-merge": (r) => r.type === "sub-task-completed" && r.subTaskId === "a",
    "mid-merge": (r) => r.type === "sub-task-completed" && r.subTaskId === "a",
  };
  const store = new DyingStore(dieAt[point]);
  const first = createManager({ executor: work(), cwd: repo, store, createRunId: () => "run-1" });
  await expect(first.run("x", { plan })).rejects.toMatchObject({ code: "store-error" });
  const refs = runRefs("run-1");
  const logged = await store.read("run-1");
  const base = (logged[0] as Extract<RunEvent, { type: "run-started" }>).workspace;
  if (base?.kind !== "worktree") throw new Error("expected a worktree run");
  if (point === "before-merge") sh(repo, "update-ref", refs.tip, base.base);
  else if (point === "mid-merge") expect(sh(repo, "rev-parse", refs.tip)).not.toBe(base.base);
  // What a kill -9 leaves and `close` could not remove: a registered worktree of the run.
  const stale = join(tmpdir(), "taskledger-worktrees", "run-1", "slot-1");
  sh(repo, "worktree", "add", "--detach", "--force", stale, base.base);

  store.dieAt = () => false;
  store.dead = false;
  const resumed = createManager({ executor: work(), cwd: repo, store });
  const report = await resumed.resume("run-1").result;
  return { repo, report, records: await store.read("run-1"), stale };
}

describe("worktree runs resume after a crash at any point", () => {
  for (const point of ["mid-attempt", "before-merge", "mid-merge"] as const) {
    it(`${point}: same final tree as an uninterrupted run, one merge per sub-task, no worktree left`, async () => {
      const { repo, report, records, stale } = await crashAndResume(point);
      expect(report.status).toBe("completed");
      expect(read(repo, "lib.txt")).toBe("lib\n");
      expect(read(repo, "use.txt")).toBe("uses lib\n");
      expect(report.workspace).toMatchObject({ applied: true, branch: "taskledger/run-1" });
      expect(sh(repo, "rev-list", "--merges", "--count", "main..taskledger/run-1")).toBe("2");
      for (const id of ["a", "b"]) {
        expect(
          records.filter((r) => r.type === "sub-task-completed" && r.subTaskId === id),
        ).toHaveLength(1);
      }
      expect(existsSync(stale)).toBe(false);
      // Nothing the crashed and the resumed session wrote leaves the repository broken.
      expect(spawnSync("git", ["fsck", "--full"], { cwd: repo }).status).toBe(0);
      await onlyFreeSlotsLeft(repo, "run-1");
      const aStarts = records.filter((r) => r.type === "sub-task-started" && r.subTaskId === "a");
      // Only an interrupted attempt runs again; a finished one is merged, not redone.
      expect(aStarts).toHaveLength(point === "mid-attempt" ? 2 : 1);
    });
  }
});

describe("an executor whose attempts outlive the manager process (resumesAttempts)", () => {
  it("is asked for the interrupted attempt again, under the same number, logged once", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const store = new DyingStore((r) => r.type === "attempt-finished" && r.subTaskId === "a");
    const first = createManager({ executor: work(), cwd: repo, store, createRunId: () => "run-1" });
    await expect(first.run("x", { plan })).rejects.toMatchObject({ code: "store-error" });
    store.dieAt = () => false;
    store.dead = false;
    const inner = work();
    const resumed = createManager({
      executor: { resumesAttempts: true, run: (prompt, options) => inner.run(prompt, options) },
      cwd: repo,
      store,
    });
    const report = await resumed.resume("run-1").result;
    expect(report.status).toBe("completed");
    expect(read(repo, "use.txt")).toBe("uses lib\n");
    expect(inner.calls.map((c) => [c.subTaskId, c.attempt])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    const records = await store.read("run-1");
    const aStarts = records.filter((r) => r.type === "sub-task-started" && r.subTaskId === "a");
    expect(aStarts).toHaveLength(1);
  });
});

describe("a cancelled attempt, resumed with an executor that has resumesAttempts", () => {
  it("is not taken over (its result is known): the next attempt number runs", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const store = new MemoryRunStore();
    const controller = new AbortController();
    const hanging: Executor = {
      resumesAttempts: true,
      run: (_prompt, options) =>
        new Promise((resolve) => {
          options.abortSignal.addEventListener("abort", () =>
            resolve({
              outcome: "cancelled",
              finalText: "",
              toolCalls: [],
              stepFinishReasons: [],
              filesChanged: [],
              usage: emptyUsage(),
              error: "aborted",
              durationMs: 1,
            }),
          );
          controller.abort();
        }),
    };
    const first = createManager({
      executor: hanging,
      cwd: repo,
      store,
      createRunId: () => "run-1",
    });
    expect((await first.start("x", { plan, abortSignal: controller.signal }).result).status).toBe(
      "cancelled",
    );
    const inner = work();
    const resumed = createManager({
      executor: { resumesAttempts: true, run: (prompt, options) => inner.run(prompt, options) },
      cwd: repo,
      store,
    });
    expect((await resumed.resume("run-1").result).status).toBe("completed");
    expect(inner.calls.map((c) => [c.subTaskId, c.attempt])).toEqual([
      ["a", 2],
      ["b", 1],
    ]);
  });
});
