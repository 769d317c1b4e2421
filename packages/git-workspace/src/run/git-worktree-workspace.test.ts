import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import {
  createManager,
  makeRepo,
  onlyFreeSlotsLeft,
  read,
  scriptedWorkExecutor,
  sh,
  task,
  userState,
  writeFiles,
} from "../test-support/git-repo.js";

function runIn(
  cwd: string,
  executor: ReturnType<typeof scriptedWorkExecutor>,
  plan: { subTasks: ReturnType<typeof task>[] },
  extra: {
    concurrency?: number;
    maxRetries?: number;
    apply?: boolean;
    isolation?: "worktree";
  } = {},
) {
  const events: RunEvent[] = [];
  const manager = createManager({
    executor,
    cwd,
    concurrency: 4,
    replan: { enabled: false },
    ...extra,
  });
  const result = manager.run("x", { plan, onEvent: (e) => events.push(e) });
  return { events, result };
}

/** Resolves once `count` callers are waiting, so parallel attempts surely start from one base. */
function barrier(count: number): () => Promise<void> {
  let waiting = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return () => {
    if (++waiting === count) open();
    return opened;
  };
}

describe("git worktree isolation", () => {
  it("lands two parallel sub-tasks, each merged once, applied as uncommitted changes; the user's index and branches untouched", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const before = userState(repo);
    const index = read(repo, ".git/index");
    const duringRun: string[] = [];
    const meet = barrier(2);
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        await meet();
        writeFiles(cwd, { "a.txt": "from a\n" });
        duringRun.push(userState(repo));
        return undefined;
      },
      b: async (cwd) => {
        await meet();
        writeFiles(cwd, { "src/b.txt": "from b\n" });
        duringRun.push(userState(repo));
        return undefined;
      },
    });
    const { events, result } = runIn(repo, executor, { subTasks: [task("a"), task("b")] });
    const report = await result;

    expect(report.status).toBe("completed");
    expect(new Set(duringRun)).toEqual(new Set([before]));
    for (const call of executor.calls) expect(call.cwd.startsWith(repo)).toBe(false);
    const branch = `taskledger/${report.runId}`;
    expect(report.workspace).toMatchObject({ isolation: "worktree", branch, applied: true });
    expect(sh(repo, "rev-list", "--merges", "--count", `main..${branch}`)).toBe("2");
    expect(report.subTasks.map((s) => s.filesChanged)).toEqual([["a.txt"], ["src/b.txt"]]);
    // Applied as uncommitted work; the index and HEAD's branch are as they were.
    expect(read(repo, "a.txt")).toBe("from a\n");
    expect(read(repo, "src/b.txt")).toBe("from b\n");
    expect(read(repo, ".git/index")).toBe(index);
    expect(sh(repo, "rev-parse", "HEAD")).toBe(sh(repo, "rev-parse", "main"));
    expect(sh(repo, "status", "--porcelain", "-uall")).toBe("?? a.txt\n?? src/b.txt");
    expect(sh(repo, "branch", "--format=%(refname:short)")).toBe(`main\n${branch}`);
    await onlyFreeSlotsLeft(repo, report.runId);
    const started = events.find((e) => e.type === "run-started");
    expect(started).toMatchObject({ workspace: { kind: "worktree", apply: true } });
  });

  it("a conflict is not completion: the loser retries from the new tip and both changes land", async () => {
    const repo = makeRepo({ "f.txt": "1\n2\n3\n" });
    const meet = barrier(2);
    const prompts: string[] = [];
    const edit = (letter: string) => async (cwd: string, options: { attempt: number }) => {
      if (options.attempt === 1) await meet();
      const lines = read(cwd, "f.txt").split("\n");
      lines[1] = lines[1] === "2" ? letter : `${lines[1]} ${letter}`;
      writeFiles(cwd, { "f.txt": lines.join("\n") });
      return undefined;
    };
    const executor = scriptedWorkExecutor({ a: edit("A"), b: edit("B") });
    const original = executor.run.bind(executor);
    executor.run = (prompt, options) => {
      prompts.push(prompt);
      return original(prompt, options);
    };
    const { events, result } = runIn(repo, executor, { subTasks: [task("a"), task("b")] });
    const report = await result;

    expect(report.status).toBe("completed");
    const conflicted = events.filter((e) => e.type === "sub-task-conflicted");
    expect(conflicted).toHaveLength(1);
    const loser = conflicted[0]! as Extract<RunEvent, { type: "sub-task-conflicted" }>;
    const winner = loser.subTaskId === "a" ? "b" : "a";
    expect(loser).toMatchObject({ files: ["f.txt"], with: [winner] });
    expect(loser.entry).toMatchObject({ completed: false, incomplete: "merge-conflict" });
    // The retry started at the tip holding the winner's merge, and was told what it met.
    const winnerMerge = events.find(
      (e) => e.type === "sub-task-completed" && e.subTaskId === winner,
    ) as Extract<RunEvent, { type: "sub-task-completed" }>;
    const retry = events.find(
      (e) => e.type === "sub-task-started" && e.subTaskId === loser.subTaskId && e.attempt === 2,
    );
    expect(retry).toMatchObject({ from: winnerMerge.workspace!.merge });
    expect(prompts.at(-1)).toContain("f.txt");
    const line = read(repo, "f.txt").split("\n")[1];
    expect(line === "A B" || line === "B A").toBe(true);
    expect(sh(repo, "rev-list", "--merges", "--count", `main..taskledger/${report.runId}`)).toBe(
      "2",
    );
  });

  it("a failed sub-task's edits never reach the user's tree; its attempts stay under refs/taskledger", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const executor = scriptedWorkExecutor({
      bad: async (cwd) => {
        writeFiles(cwd, { "junk.txt": "half done\n" });
        return { outcome: "error", error: "provider failed" };
      },
      good: async (cwd) => {
        writeFiles(cwd, { "good.txt": "ok\n" });
        return undefined;
      },
    });
    const { result } = runIn(
      repo,
      executor,
      { subTasks: [task("bad"), task("good")] },
      {
        maxRetries: 1,
      },
    );
    const report = await result;

    expect(report.status).toBe("partial");
    expect(existsSync(join(repo, "junk.txt"))).toBe(false);
    expect(read(repo, "good.txt")).toBe("ok\n");
    // The retry continued from the first attempt's work; both are kept, neither is a branch.
    const attempts = sh(
      repo,
      "for-each-ref",
      "--format=%(refname)",
      `refs/taskledger/${report.runId}/attempts/bad`,
    );
    expect(attempts.split("\n")).toHaveLength(2);
    expect(sh(repo, "show", `refs/taskledger/${report.runId}/attempts/bad/2:junk.txt`)).toBe(
      "half done",
    );
    await onlyFreeSlotsLeft(repo, report.runId);
  });

  it("names no branch it never made: a run with nothing completed, and a cancelled one, say why instead", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const failing = scriptedWorkExecutor({
      bad: async () => ({ outcome: "error", error: "provider failed" }),
    });
    const failed = await runIn(repo, failing, { subTasks: [task("bad")] }, { maxRetries: 0 })
      .result;
    expect(failed.status).toBe("failed");
    expect(failed.workspace).toMatchObject({
      isolation: "worktree",
      applied: false,
      note: "Nothing to apply: no sub-task completed.",
    });
    expect(failed.workspace?.branch).toBeUndefined();

    const controller = new AbortController();
    const waiting = scriptedWorkExecutor({
      slow: async () => {
        controller.abort();
        return { outcome: "cancelled" };
      },
    });
    const cancelled = await createManager({ executor: waiting, cwd: repo }).run("x", {
      plan: { subTasks: [task("slow")] },
      abortSignal: controller.signal,
    });
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.workspace?.branch).toBeUndefined();
    expect(cancelled.workspace?.note).toContain("No branch made: the run was cancelled");
    for (const runId of [failed.runId, cancelled.runId]) {
      expect(sh(repo, "branch", "--list", `taskledger/${runId}`)).toBe("");
    }
  });

  it("a reused worktree holds nothing of the attempt before it, not even ignored files", async () => {
    const repo = makeRepo({ ".gitignore": "*.log\n", "keep.txt": "keep\n" });
    const seen: string[][] = [];
    const executor = scriptedWorkExecutor({
      first: async (cwd) => {
        writeFiles(cwd, { "junk.txt": "x\n", "build.log": "x\n", "keep.txt": "changed\n" });
        return { outcome: "error", error: "gave up" };
      },
      second: async (cwd) => {
        seen.push(readdirSync(cwd).sort(), [read(cwd, "keep.txt")]);
        return undefined;
      },
    });
    const { result } = runIn(
      repo,
      executor,
      { subTasks: [task("first"), task("second")] },
      {
        concurrency: 1,
        maxRetries: 0,
      },
    );
    await result;
    // One worktree served both attempts, reset to the run's tip in between.
    expect(new Set(executor.calls.map((c) => c.cwd)).size).toBe(1);
    expect(seen).toEqual([[".git", ".gitignore", "keep.txt"], ["keep\n"]]);
  });

  it("agents see the dirty base (modified, new and deleted files), not ignored ones; the user's changes stay", async () => {
    const repo = makeRepo({ "m.txt": "old\n", "d.txt": "doomed\n", ".gitignore": "*.log\n" });
    writeFiles(repo, { "m.txt": "modified\n", "n.txt": "new\n", "debug.log": "ignored\n" });
    rmSync(join(repo, "d.txt"));
    const index = read(repo, ".git/index");
    const seen: Record<string, unknown> = {};
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        seen.m = read(cwd, "m.txt");
        seen.n = read(cwd, "n.txt");
        seen.d = existsSync(join(cwd, "d.txt"));
        seen.log = existsSync(join(cwd, "debug.log"));
        writeFiles(cwd, { "m.txt": "modified\nand more\n" });
        return undefined;
      },
    });
    const report = await runIn(repo, executor, { subTasks: [task("a")] }).result;

    expect(seen).toEqual({ m: "modified\n", n: "new\n", d: false, log: false });
    expect(report.subTasks[0]!.filesChanged).toEqual(["m.txt"]);
    expect(read(repo, "m.txt")).toBe("modified\nand more\n");
    expect(read(repo, "n.txt")).toBe("new\n");
    expect(existsSync(join(repo, "d.txt"))).toBe(false);
    expect(read(repo, ".git/index")).toBe(index);
  });

  it("passes each dependency's changed files (from git) forward, and works from a subdirectory", async () => {
    const repo = makeRepo({ "pkg/index.js": "x\n" });
    const prompts: Record<string, string> = {};
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        writeFiles(cwd, { "lib.js": "lib\n" });
        return undefined;
      },
      b: async (cwd) => {
        writeFiles(cwd, { "use.js": read(cwd, "lib.js") });
        return undefined;
      },
    });
    const original = executor.run.bind(executor);
    executor.run = (prompt, options) => {
      prompts[options.subTask.id] = prompt;
      return original(prompt, options);
    };
    const report = await runIn(join(repo, "pkg"), executor, {
      subTasks: [task("a"), task("b", ["a"])],
    }).result;

    expect(report.status).toBe("completed");
    expect(executor.calls[0]!.cwd.endsWith("/pkg")).toBe(true);
    expect(prompts.b).toContain("Files changed: pkg/lib.js.");
    expect(read(repo, "pkg/use.js")).toBe("lib\n");
  });

  it("20 sub-tasks in parallel on one repository: every change lands, no index.lock failure", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const ids = Array.from({ length: 20 }, (_, i) => `t${i}`);
    const executor = scriptedWorkExecutor(
      Object.fromEntries(
        ids.map((id) => [
          id,
          async (cwd: string) => {
            writeFiles(cwd, { [`out/${id}.txt`]: `${id}\n` });
            return undefined;
          },
        ]),
      ),
    );
    const { events, result } = runIn(
      repo,
      executor,
      { subTasks: ids.map((id) => task(id)) },
      {
        concurrency: 20,
      },
    );
    const report = await result;

    expect(report.status).toBe("completed");
    expect(events.filter((e) => e.type === "sub-task-started")).toHaveLength(20);
    expect(readdirSync(join(repo, "out")).sort()).toEqual(ids.map((id) => `${id}.txt`).sort());
    expect(sh(repo, "rev-list", "--merges", "--count", `main..taskledger/${report.runId}`)).toBe(
      "20",
    );
    await onlyFreeSlotsLeft(repo, report.runId);
  });

  it("leaves the tree alone when it changed during the run, and with apply: false", async () => {
    for (const apply of [true, false]) {
      const repo = makeRepo({ "README.md": "hello\n" });
      const executor = scriptedWorkExecutor({
        a: async (cwd) => {
          writeFiles(cwd, { "a.txt": "a\n" });
          if (apply) writeFiles(repo, { "README.md": "edited by the user\n" });
          return undefined;
        },
      });
      const report = await runIn(repo, executor, { subTasks: [task("a")] }, { apply }).result;
      expect(report.workspace?.applied).toBe(false);
      expect(report.workspace?.note).toMatch(apply ? /working tree changed/ : /--no-apply/);
      expect(existsSync(join(repo, "a.txt"))).toBe(false);
      expect(sh(repo, "show", `taskledger/${report.runId}:a.txt`)).toBe("a");
    }
  });
});

describe("workspace errors and the shared fallback", () => {
  const plan = { subTasks: [task("a")] };
  const nothing = () => scriptedWorkExecutor({});

  it("names a bare repository, a detached HEAD and a merge in progress", async () => {
    const bare = mkdtempSync(join(tmpdir(), "taskledger-bare-"));
    sh(bare, "init", "-q", "--bare");
    await expect(runIn(bare, nothing(), plan).result).rejects.toMatchObject({
      code: "workspace-error",
      reason: "bare-repository",
    });

    const detached = makeRepo({ "f.txt": "1\n" });
    sh(detached, "checkout", "-q", "--detach");
    await expect(
      runIn(detached, nothing(), plan, { isolation: "worktree" }).result,
    ).rejects.toMatchObject({ reason: "detached-head" });

    const merging = makeRepo({ "f.txt": "1\n" });
    sh(merging, "checkout", "-qb", "other");
    writeFiles(merging, { "f.txt": "other\n" });
    sh(merging, "commit", "-qam", "other");
    sh(merging, "checkout", "-q", "main");
    writeFiles(merging, { "f.txt": "main\n" });
    sh(merging, "commit", "-qam", "main");
    expect(() =>
      execFileSync("git", ["merge", "other"], { cwd: merging, stdio: "ignore" }),
    ).toThrow();
    await expect(runIn(merging, nothing(), plan).result).rejects.toMatchObject({
      reason: "operation-in-progress",
    });
  });

  it("runs shared with a notice on a detached HEAD (a CI checkout) by default", async () => {
    const detached = makeRepo({ "f.txt": "1\n" });
    sh(detached, "checkout", "-q", "--detach");
    const report = await runIn(detached, nothing(), plan).result;
    expect(report.status).toBe("completed");
    expect(report.workspace).toMatchObject({ isolation: "shared" });
    expect(report.workspace?.note).toMatch(/detached HEAD: attempts share the directory/);
  });

  it("runs shared with a notice outside a repository, and refuses worktrees there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "taskledger-plain-"));
    mkdirSync(join(dir, "sub"));
    const report = await runIn(join(dir, "sub"), nothing(), plan).result;
    expect(report.workspace).toMatchObject({ isolation: "shared", applied: false });
    expect(report.workspace?.note).toMatch(/not in a git repository/);

    const manager = createManager({ executor: nothing(), cwd: dir, isolation: "worktree" });
    await expect(manager.run("x", { plan })).rejects.toMatchObject({ reason: "not-a-repository" });
  });

  it("names a missing git; the default falls back to shared", async () => {
    const repo = makeRepo({ "f.txt": "1\n" });
    const path = process.env.PATH;
    process.env.PATH = mkdtempSync(join(tmpdir(), "taskledger-nogit-"));
    try {
      const strict = createManager({ executor: nothing(), cwd: repo, isolation: "worktree" });
      await expect(strict.run("x", { plan })).rejects.toMatchObject({ reason: "git-missing" });
      const report = await runIn(repo, nothing(), plan).result;
      expect(report.workspace).toMatchObject({ isolation: "shared" });
      expect(report.workspace?.note).toMatch(/git was not found/);
    } finally {
      process.env.PATH = path;
    }
  });

  it('isolation "shared" works in the repository itself', async () => {
    const repo = makeRepo({ "f.txt": "1\n" });
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        writeFileSync(join(cwd, "x.txt"), "x\n");
        return undefined;
      },
    });
    const manager = createManager({ executor, cwd: repo, isolation: "shared" });
    const report = await manager.run("x", { plan });
    expect(executor.calls[0]!.cwd).toBe(repo);
    expect(read(repo, "x.txt")).toBe("x\n");
    expect(report.workspace).toEqual({ isolation: "shared", applied: false });
  });
});
