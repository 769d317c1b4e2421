import { existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { findRepository } from "../git/git-repository.js";
import {
  createManager,
  makeRepo,
  read,
  scriptedWorkExecutor,
  sh,
  task,
  userState,
  writeFiles,
} from "../test-support/git-repo.js";
import { finishRun } from "./finish-run.js";
import { openWorktreeWorkspace } from "./git-worktree-workspace.js";
import { maxOutsidePaths } from "./outside-changes.js";
import { startWorktreeRun } from "./worktree-run.js";

const monorepo = {
  "README.md": "top\n",
  "package.json": "{}\n",
  "packages/app/index.js": "app\n",
  "packages/app/moving.txt": "leaves the package\n",
  "packages/other/index.js": "other\n",
  "lib/util.txt": "joins the package\n",
};

type AttemptFinished = Extract<RunEvent, { type: "attempt-finished" }>;

async function runIn(cwd: string, executor: ReturnType<typeof scriptedWorkExecutor>) {
  const events: RunEvent[] = [];
  const manager = createManager({ executor, cwd, concurrency: 2, replan: { enabled: false } });
  const report = await manager.run("x", {
    plan: { subTasks: [task("a")] },
    onEvent: (e) => events.push(e),
  });
  const finished = events.filter((e): e is AttemptFinished => e.type === "attempt-finished");
  return { report, finished };
}

describe("only the run's directory is kept", () => {
  it("a run in packages/app keeps what the agent wrote there and leaves out, and names, what it wrote elsewhere", async () => {
    const repo = makeRepo(monorepo);
    const cwd = join(repo, "packages/app");
    const before = sh(repo, "status", "--porcelain", "-uall");
    const executor = scriptedWorkExecutor({
      a: async (dir) => {
        writeFiles(dir, { "inside.txt": "y\n", "index.js": "app, changed\n" });
        // What a script run by the agent does: its paths go up out of the run's directory.
        writeFiles(join(dir, "../.."), {
          "ROOT_CONFIG.txt": "x\n",
          "packages/other/index.js": "other, changed\n",
        });
        return undefined;
      },
    });
    const { report, finished } = await runIn(cwd, executor);

    expect(report.status).toBe("completed");
    const outside = ["ROOT_CONFIG.txt", "packages/other/index.js"];
    expect(finished[0]!.result.outsideCwd).toEqual({ paths: outside, count: 2 });
    const [s] = report.subTasks;
    expect(s!.filesChanged).toEqual(["packages/app/index.js", "packages/app/inside.txt"]);
    expect(s!.outsideCwd).toEqual([{ attempt: 1, paths: outside, count: 2 }]);
    // The attempt's commit and the run's branch hold only the inside.
    const commit = finished[0]!.commit!;
    expect(sh(repo, "diff", "--name-only", `${commit}^`, commit)).toBe(
      "packages/app/index.js\npackages/app/inside.txt",
    );
    const branch = `taskledger/${report.runId}`;
    expect(sh(repo, "diff", "--name-only", "main", branch)).toBe(
      "packages/app/index.js\npackages/app/inside.txt",
    );
    // Applied in the package; the repository's top and the other package untouched.
    expect(report.workspace).toMatchObject({ applied: true });
    expect(read(cwd, "inside.txt")).toBe("y\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
    expect(read(repo, "packages/other/index.js")).toBe("other\n");
    expect(before).toBe("");
    // (`sh` trims the status's leading blank.)
    expect(sh(repo, "status", "--porcelain", "-uall")).toBe(
      "M packages/app/index.js\n?? packages/app/inside.txt",
    );
  });

  it("a rename across the edge keeps only its inside half; a delete outside is left out", async () => {
    const repo = makeRepo(monorepo);
    const cwd = join(repo, "packages/app");
    const executor = scriptedWorkExecutor({
      a: async (dir) => {
        const top = join(dir, "../..");
        renameSync(join(dir, "moving.txt"), join(top, "moved-out.txt"));
        renameSync(join(top, "lib/util.txt"), join(dir, "util.txt"));
        rmSync(join(top, "README.md"));
        return undefined;
      },
    });
    const { report, finished } = await runIn(cwd, executor);

    expect(report.status).toBe("completed");
    const outside = ["README.md", "lib/util.txt", "moved-out.txt"];
    expect(finished[0]!.result.outsideCwd).toEqual({ paths: outside, count: 3 });
    expect(report.subTasks[0]!.filesChanged).toEqual([
      "packages/app/moving.txt",
      "packages/app/util.txt",
    ]);
    // Out of the package: gone from it, not added outside. Into it: added, still where it was.
    expect(existsSync(join(cwd, "moving.txt"))).toBe(false);
    expect(existsSync(join(repo, "moved-out.txt"))).toBe(false);
    expect(read(cwd, "util.txt")).toBe("joins the package\n");
    expect(read(repo, "lib/util.txt")).toBe("joins the package\n");
    expect(read(repo, "README.md")).toBe("top\n");
  });

  it("a run at the repository's top keeps a file written at the top; nothing is left out", async () => {
    const repo = makeRepo(monorepo);
    const before = userState(repo);
    const executor = scriptedWorkExecutor({
      a: async (dir) => {
        writeFiles(dir, { "ROOT_CONFIG.txt": "x\n", "packages/other/index.js": "changed\n" });
        return undefined;
      },
    });
    const { report, finished } = await runIn(repo, executor);

    expect(finished[0]!.result.outsideCwd).toBeUndefined();
    expect(report.subTasks[0]!.outsideCwd).toBeUndefined();
    expect(report.subTasks[0]!.filesChanged).toEqual([
      "ROOT_CONFIG.txt",
      "packages/other/index.js",
    ]);
    expect(read(repo, "ROOT_CONFIG.txt")).toBe("x\n");
    expect(userState(repo)).not.toBe(before);
  });

  it("names at most 50 paths left out and counts them all", async () => {
    const repo = makeRepo(monorepo);
    const cwd = join(repo, "packages/app");
    const many = Object.fromEntries(
      Array.from({ length: 70 }, (_, i) => [`out/f${String(i).padStart(2, "0")}.txt`, "x\n"]),
    );
    const executor = scriptedWorkExecutor({
      a: async (dir) => {
        writeFiles(join(dir, "../.."), many);
        writeFiles(dir, { "inside.txt": "y\n" });
        return undefined;
      },
    });
    const { report } = await runIn(cwd, executor);

    const [left] = report.subTasks[0]!.outsideCwd!;
    expect(left!.count).toBe(70);
    expect(left!.paths).toHaveLength(maxOutsidePaths);
    expect(left!.paths[0]).toBe("out/f00.txt");
  });

  it("best-of: every candidate's commit keeps only the run's directory, and each names what it left out", async () => {
    const repo = makeRepo(monorepo);
    const cwd = join(repo, "packages/app");
    const executor = scriptedWorkExecutor({
      a: async (dir, options) => {
        writeFiles(dir, { [`c${options.attempt}.txt`]: "y\n" });
        writeFiles(join(dir, "../.."), { "ROOT_CONFIG.txt": `${options.attempt}\n` });
        return undefined;
      },
    });
    const manager = createManager({
      executor,
      cwd,
      concurrency: 2,
      bestOf: { candidates: 2, for: "all" },
      replan: { enabled: false },
    });
    const report = await manager.run("x", { plan: { subTasks: [task("a")] } });

    expect(report.status).toBe("completed");
    const [s] = report.subTasks;
    expect(s!.outsideCwd).toEqual([
      { attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 1 },
      { attempt: 2, paths: ["ROOT_CONFIG.txt"], count: 1 },
    ]);
    const candidates = s!.candidates![0]!.candidates;
    expect(candidates).toHaveLength(2);
    for (const candidate of candidates) {
      const files = sh(repo, "diff", "--name-only", `${candidate.commit}^`, candidate.commit!);
      expect(files).toBe(`packages/app/c${candidate.attempt}.txt`);
    }
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
  });

  it("a merge and the final apply keep only the run's directory too, whatever commit they are given", async () => {
    const repo = makeRepo(monorepo);
    const found = await findRepository(join(repo, "packages/app"));
    const runId = "outside-merge";
    const record = await startWorktreeRun(runId, found!, true, {
      dependencies: false,
      include: [],
    });
    // A commit made without the capture's filter (a log from before it): inside and outside.
    writeFiles(repo, { "packages/app/in.txt": "in\n", "ROOT_CONFIG.txt": "x\n" });
    sh(repo, "add", "-A");
    const tree = sh(repo, "write-tree");
    sh(repo, "reset", "-q");
    rmSync(join(repo, "packages/app/in.txt"));
    rmSync(join(repo, "ROOT_CONFIG.txt"));
    const raw = sh(repo, "commit-tree", tree, "-p", record.base, "-m", "raw");

    const workspace = await openWorktreeWorkspace(runId, record, record.base, false);
    const merged = await workspace.integrate({
      subTaskId: "a",
      title: "A",
      commit: raw,
      onMerged: async () => {},
    });
    expect(merged).toMatchObject({ merged: true, filesChanged: ["packages/app/in.txt"] });
    await workspace.close();

    // The run's branch itself holding an outside change: the apply still leaves it out.
    const outcome = await finishRun(record, raw, true);
    expect(outcome.applied).toBe(true);
    expect(outcome.note).toContain("1 path(s) outside the run's directory were not applied");
    expect(read(repo, "packages/app/in.txt")).toBe("in\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
  });
});
