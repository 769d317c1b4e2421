import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  watch,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { RunEvent, SlotPreparation } from "@taskledger/core";
import { processesUnder } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { gitWorkspaces } from "../git-workspaces.js";
import {
  createManager,
  makeRepo,
  read,
  scriptedWorkExecutor,
  sh,
  task,
  writeFiles,
} from "../test-support/git-repo.js";

/** A checksum of every file and link under `dir`: what a user would lose if it changed. */
function treeSum(dir: string): string {
  const hash = createHash("sha256");
  const walk = (path: string) => {
    for (const name of readdirSync(path).sort()) {
      const full = join(path, name);
      const info = lstatSync(full);
      hash.update(`${full.slice(dir.length)}:${info.mode}\n`);
      if (info.isSymbolicLink()) hash.update(readlinkSync(full));
      else if (info.isDirectory()) walk(full);
      else hash.update(readFileSync(full));
    }
  };
  walk(dir);
  return hash.digest("hex");
}

/** A project as users have one: installed dependencies, a venv, a `.env`, all ignored. */
function project(): string {
  const repo = makeRepo({
    ".gitignore": "node_modules/\n.venv/\n.env\nbuild/\n",
    ".worktreeinclude": ".env\n",
    "package-lock.json": '{"lockfileVersion":3}\n',
    "packages/a/package.json": '{"name":"a"}\n',
    "src.txt": "source\n",
  });
  writeFiles(repo, {
    "node_modules/dep/index.js": "module.exports = 1;\n",
    "node_modules/dep/package.json": '{"name":"dep"}\n',
    "packages/a/node_modules/nested/index.js": "module.exports = 2;\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
    ".venv/bin/tool": `#!${repo}/.venv/bin/python\nprint("tool")\n`,
    ".env": "SECRET=from-the-user\n",
  });
  mkdirSync(join(repo, "node_modules/.bin"));
  symlinkSync("../dep/index.js", join(repo, "node_modules/.bin/dep"));
  symlinkSync(join(repo, "node_modules/dep/index.js"), join(repo, "node_modules/.bin/absolute"));
  return repo;
}

function run(
  repo: string,
  executor: ReturnType<typeof scriptedWorkExecutor>,
  subTasks: ReturnType<typeof task>[],
  options: Parameters<typeof gitWorkspaces>[0] = {},
  concurrency = 1,
) {
  const events: RunEvent[] = [];
  const manager = createManager({
    executor,
    cwd: repo,
    concurrency,
    replan: { enabled: false },
    workspaces: gitWorkspaces(options),
  });
  const result = manager.run("x", { plan: { subTasks }, onEvent: (e) => events.push(e) });
  return { events, result };
}

const prepared = (events: RunEvent[]): SlotPreparation[] =>
  events.flatMap((e) => (e.type === "slot-prepared" ? [e.preparation] : []));

describe("the project's environment in every slot", () => {
  it("copies ignored dependency directories and included files; nothing done in a slot reaches the user's copies or the commits", async () => {
    const repo = project();
    const before = treeSum(join(repo, "node_modules"));
    const venvBefore = treeSum(join(repo, ".venv"));
    const seen: Record<string, unknown> = {};
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        seen.dep = read(cwd, "node_modules/dep/index.js");
        seen.nested = read(cwd, "packages/a/node_modules/nested/index.js");
        seen.env = read(cwd, ".env");
        seen.tool = read(cwd, ".venv/bin/tool");
        seen.relative = readlinkSync(join(cwd, "node_modules/.bin/dep"));
        seen.absolute = readlinkSync(join(cwd, "node_modules/.bin/absolute"));
        // What `npm install left-pad` and an agent's edits do to a dependency directory.
        writeFiles(cwd, { "node_modules/left-pad/index.js": "pad\n", "a.txt": "a\n" });
        appendFileSync(join(cwd, "node_modules/dep/index.js"), "// changed in place\n");
        appendFileSync(join(cwd, ".venv/bin/tool"), "# changed\n");
        writeFileSync(join(cwd, ".env"), "SECRET=changed-by-the-agent\n");
        // Even un-ignored, the copies are not part of the work.
        writeFileSync(join(cwd, ".gitignore"), "build/\n");
        return undefined;
      },
    });
    const { events, result } = run(repo, executor, [task("a")]);
    const report = await result;
    expect(report.status).toBe("completed");
    expect(seen).toMatchObject({
      dep: "module.exports = 1;\n",
      nested: "module.exports = 2;\n",
      env: "SECRET=from-the-user\n",
      relative: "../dep/index.js",
    });
    const slot = executor.calls[0]!.cwd;
    expect(seen.tool).toBe(`#!${slot}/.venv/bin/python\nprint("tool")\n`);
    expect(seen.absolute).toBe(join(slot, "node_modules/dep/index.js"));

    expect(treeSum(join(repo, "node_modules"))).toBe(before);
    expect(treeSum(join(repo, ".venv"))).toBe(venvBefore);
    expect(read(repo, ".env")).toBe("SECRET=from-the-user\n");
    const commit = report.subTasks[0]!.commit!;
    const files = sh(repo, "ls-tree", "-r", "--name-only", commit).split("\n");
    expect(files).toContain("a.txt");
    expect(files.filter((f) => /node_modules|\.venv|^\.env$/.test(f))).toEqual([]);
    // Applied: a.txt and the .gitignore change, nothing of the environment.
    expect(read(repo, "a.txt")).toBe("a\n");
    expect(existsSync(join(repo, "node_modules/left-pad"))).toBe(false);

    const [first] = prepared(events);
    expect(first).toMatchObject({
      slot: 1,
      reason: "new",
      dependencies: [".venv", "node_modules", "packages/a/node_modules"],
      from: repo,
      included: [".env"],
      includedCount: 1,
    });
    expect(report.workspace?.slots?.[0]).toEqual(first);
  });

  it("keeps a reused slot's environment while the lockfiles stay, and makes it again when they change", async () => {
    const repo = project();
    const counter = join(mkdtempSync(join(tmpdir(), "taskledger-setup-")), "setup-runs");
    const seen: Record<string, boolean> = {};
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        writeFiles(cwd, { "node_modules/left-pad/index.js": "pad\n", "a.txt": "a\n" });
        return undefined;
      },
      b: async (cwd) => {
        seen.bKeeps = existsSync(join(cwd, "node_modules/left-pad/index.js"));
        seen.bBuilt = existsSync(join(cwd, "build/stamp"));
        writeFiles(cwd, { "package-lock.json": '{"lockfileVersion":3,"changed":true}\n' });
        return undefined;
      },
      c: async (cwd) => {
        seen.cFresh = !existsSync(join(cwd, "node_modules/left-pad"));
        seen.cDep = existsSync(join(cwd, "node_modules/dep/index.js"));
        return undefined;
      },
    });
    const setup = `mkdir -p build && date > build/stamp && echo run >> ${counter}`;
    const { events, result } = run(
      repo,
      executor,
      [task("a"), task("b", ["a"]), task("c", ["b"])],
      { setup },
    );
    const report = await result;
    expect(report.status).toBe("completed");
    expect(seen).toEqual({ bKeeps: true, bBuilt: true, cFresh: true, cDep: true });
    // One slot: set up when made, and again only when b changed the lockfile.
    expect(new Set(executor.calls.map((c) => c.cwd)).size).toBe(1);
    expect(readFileSync(counter, "utf8")).toBe("run\nrun\n");
    expect(prepared(events).map((p) => [p.slot, p.reason, p.setup?.exitCode])).toEqual([
      [1, "new", 0],
      [1, "inputs-changed", 0],
    ]);
  });

  it("fails the run before any attempt when the first slot's setup fails, showing its output", async () => {
    const repo = project();
    const executor = scriptedWorkExecutor({});
    const { events, result } = run(repo, executor, [task("a")], {
      setup: "echo installing; echo 'npm ERR! missing script' >&2; exit 3",
    });
    const error = await result.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "workspace-error", reason: "setup-failed" });
    expect((error as Error).message).toMatch(/exit 3[\s\S]*npm ERR! missing script/);
    expect(executor.calls).toHaveLength(0);
    // The setup runs while the plan is made (here the host's, so at once); no attempt starts.
    expect(events.map((e) => e.type)).toEqual(["run-started", "plan-created", "run-failed"]);
  });

  it("makes a later slot's setup failure that attempt's error, and the sub-task goes on", async () => {
    const repo = project();
    // a holds the first slot until b runs again, so b's attempts need the second slot and then a
    // third: no timing decides which sub-task meets the failing setup.
    let bRan!: () => void;
    const bRunning = new Promise<void>((r) => {
      bRan = r;
    });
    const executor = scriptedWorkExecutor({
      a: async () => {
        await bRunning;
        return undefined;
      },
      b: async () => {
        bRan();
        return undefined;
      },
    });
    const { events, result } = run(
      repo,
      executor,
      [task("a"), task("b")],
      // The second setup (the second slot's) fails, the others succeed.
      {
        setup: `echo >> ${repo}.count; if [ "$(wc -l < ${repo}.count)" -eq 2 ]; then echo no room; exit 4; fi`,
      },
      2,
    );
    const report = await result;
    expect(report.status).toBe("completed");
    const calls = executor.calls.map((c) => [c.subTaskId, c.attempt]);
    expect(calls.sort()).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
    const [aSlot, bSlot] = ["a", "b"].map(
      (id) => executor.calls.find((c) => c.subTaskId === id)!.cwd,
    );
    // b's first attempt met the second slot's setup, in a worktree neither later attempt ran in.
    const finished = events.flatMap((e) =>
      e.type === "attempt-finished" ? [[e.subTaskId, e.attempt, e.result.outcome]] : [],
    );
    expect(finished.sort()).toEqual([
      ["a", 1, "finished"],
      ["b", 1, "error"],
      ["b", 2, "finished"],
    ]);
    const failure = events.find(
      (e) => e.type === "attempt-finished" && e.subTaskId === "b" && e.attempt === 1,
    );
    const error = failure?.type === "attempt-finished" ? (failure.result.error ?? "") : "";
    expect(error).toMatch(
      /setup command .* failed \(exit 4\) in (\S+)\. Its output ends:\s+no room/s,
    );
    const failedIn = /\(exit 4\) in (\S+)\./.exec(error)![1]!;
    expect(new Set([aSlot, bSlot, failedIn]).size).toBe(3);
    expect(prepared(events).map((p) => [p.slot, p.reason, p.setup?.exitCode])).toEqual([
      [1, "new", 0],
      [3, "new", 0],
    ]);
  });

  it("gives every slot a working copy of a real Python virtual environment: a check imports from it, an install there stays there", async () => {
    const repo = makeRepo({ "check.py": "import mylib\nprint(mylib.VALUE)\n" });
    execFileSync("python3", ["-m", "venv", "--without-pip", ".venv"], { cwd: repo });
    // As Python 3.13's venv does: the environment ignores itself, the repository says nothing.
    writeFileSync(join(repo, ".venv/.gitignore"), "*\n");
    const site = execFileSync(
      join(repo, ".venv/bin/python"),
      ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
      { encoding: "utf8" },
    ).trim();
    writeFileSync(join(site, "mylib.py"), "VALUE = 'from the venv'\n");
    // A console script as pip writes one: its #! names the environment's own python.
    writeFileSync(
      join(repo, ".venv/bin/mytool"),
      `#!${repo}/.venv/bin/python\nimport sys\nprint(sys.prefix)\n`,
      { mode: 0o755 },
    );
    const before = treeSum(join(repo, ".venv"));
    const seen: Record<string, string> = {};
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        seen.check = execFileSync(".venv/bin/python", ["check.py"], {
          cwd,
          encoding: "utf8",
        }).trim();
        seen.prefix = execFileSync(join(cwd, ".venv/bin/mytool"), { cwd, encoding: "utf8" }).trim();
        // What `pip install` does: write into the environment's site-packages.
        execFileSync(
          ".venv/bin/python",
          [
            "-c",
            "import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()['purelib'], 'added.py').write_text('')",
          ],
          { cwd },
        );
        return undefined;
      },
    });
    const report = await run(repo, executor, [task("a")]).result;
    expect(report.status).toBe("completed");
    const slot = executor.calls[0]!.cwd;
    expect(seen).toEqual({ check: "from the venv", prefix: join(slot, ".venv") });
    expect(treeSum(join(repo, ".venv"))).toBe(before);
    expect(existsSync(join(site, "added.py"))).toBe(false);
  });

  it("a run cancelled during its first slot's setup ends cancelled, and the setup's processes are gone", async () => {
    const repo = project();
    const marker = join(mkdtempSync(join(tmpdir(), "taskledger-setup-")), "began");
    const events: RunEvent[] = [];
    const controller = new AbortController();
    const manager = createManager({
      executor: scriptedWorkExecutor({}),
      cwd: repo,
      workspaces: gitWorkspaces({ setup: `touch ${marker}; sleep 41.3` }),
    });
    const began = new Promise<void>((resolve) => {
      const watcher = watch(dirname(marker), () => {
        if (!existsSync(marker)) return;
        watcher.close();
        resolve();
      });
    });
    const run = manager.start("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: controller.signal,
      onEvent: (e) => events.push(e),
    });
    await began;
    // The setup's processes (its shell, then its sleep) carry the run's id in TASKLEDGER_SETUP_RUN:
    // seen while they run, so the check after the cancel can see them (it throws without /proc).
    expect((await processesUnder(run.runId)).length).toBeGreaterThan(0);
    controller.abort();
    const report = await run.result;
    expect(report.status).toBe("cancelled");
    expect(events.map((e) => e.type)).toEqual([
      "run-started",
      "plan-created",
      "sub-task-cancelled",
      "run-finished",
    ]);
    expect(await processesUnder(run.runId)).toEqual([]);
  });
});
