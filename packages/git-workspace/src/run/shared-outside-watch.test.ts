import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import {
  createManager,
  makeRepo,
  read,
  scriptedWorkExecutor,
  task,
  writeFiles,
} from "../test-support/git-repo.js";

type AttemptFinished = Extract<RunEvent, { type: "attempt-finished" }>;

/** A shared run whose agent writes inside.txt and ROOT_CONFIG.txt at the repository's top. */
async function sharedRun(cwd: string, top: string) {
  const events: RunEvent[] = [];
  const executor = scriptedWorkExecutor({
    a: async (dir) => {
      writeFiles(dir, { "inside.txt": "y\n" });
      writeFiles(top, { "ROOT_CONFIG.txt": "x\n" });
      return undefined;
    },
  });
  const manager = createManager({
    executor,
    cwd,
    isolation: "shared",
    replan: { enabled: false },
  });
  const report = await manager.run("x", {
    plan: { subTasks: [task("a")] },
    onEvent: (e) => events.push(e),
  });
  const finished = events.find((e): e is AttemptFinished => e.type === "attempt-finished");
  return { report, finished };
}

describe("a shared run in a package of a repository", () => {
  it("names what an attempt changed outside the run's directory, and reverts nothing: the user's own changes are neither named nor touched", async () => {
    const repo = makeRepo({ "packages/app/index.js": "app\n", "lib/util.txt": "util\n" });
    // The user's own uncommitted work outside the package, from before the run.
    writeFiles(repo, { "lib/util.txt": "the user's edit\n", "notes.txt": "mine\n" });
    const index = readFileSync(join(repo, ".git/index"));
    const cwd = join(repo, "packages/app");

    const { report, finished } = await sharedRun(cwd, repo);

    expect(report.status).toBe("completed");
    const outside = { paths: ["ROOT_CONFIG.txt"], count: 1, shared: true };
    expect(finished!.result.outsideCwd).toEqual(outside);
    expect(report.subTasks[0]!.outsideCwd).toEqual([{ attempt: 1, ...outside }]);
    // Shared: no slot to leave it in; it stays, as do the user's own files and index.
    expect(read(repo, "ROOT_CONFIG.txt")).toBe("x\n");
    expect(read(cwd, "inside.txt")).toBe("y\n");
    expect(read(repo, "lib/util.txt")).toBe("the user's edit\n");
    expect(read(repo, "notes.txt")).toBe("mine\n");
    expect(readFileSync(join(repo, ".git/index")).equals(index)).toBe(true);
  });

  it("at the repository's top nothing is outside: nothing is named", async () => {
    const repo = makeRepo({ "packages/app/index.js": "app\n" });
    const { report, finished } = await sharedRun(repo, repo);

    expect(report.status).toBe("completed");
    expect(finished!.result.outsideCwd).toBeUndefined();
    expect(report.subTasks[0]!.outsideCwd).toBeUndefined();
    expect(read(repo, "ROOT_CONFIG.txt")).toBe("x\n");
  });
});
