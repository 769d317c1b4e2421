import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  createManager,
  makeRepo,
  scriptedWorkExecutor,
  task,
  writeFiles,
} from "../test-support/git-repo.js";

/** `git fsck --full` of the user's repository: its exit code and what it said. */
function fsck(repo: string): { status: number | null; output: string } {
  const run = spawnSync("git", ["fsck", "--full"], { cwd: repo, encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const writes = scriptedWorkExecutor({
  a: async (cwd) => {
    writeFiles(cwd, { "a.txt": "a\n" });
    return undefined;
  },
  broken: async () => ({ outcome: "error", error: "the agent fell over" }),
  slow: (_cwd, options) =>
    new Promise((_resolve, reject) => {
      options.abortSignal.addEventListener("abort", () => reject(options.abortSignal.reason));
    }),
});

describe("the user's repository after a run passes git fsck --full", () => {
  it("after runs that complete, fail and are cancelled", async () => {
    const repo = makeRepo({ "README.md": "hello\n" });
    const completed = await createManager({ executor: writes, cwd: repo }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(completed.status).toBe("completed");
    const failed = await createManager({ executor: writes, cwd: repo, maxRetries: 0 }).run("x", {
      plan: { subTasks: [task("broken")] },
    });
    expect(failed.status).toBe("failed");
    const controller = new AbortController();
    const cancelled = createManager({ executor: writes, cwd: repo }).start("x", {
      plan: { subTasks: [task("slow")] },
      abortSignal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    expect((await cancelled.result).status).toBe("cancelled");
    // An ended run's marker is a commit of the empty tree: it is written, not only named.
    expect(fsck(repo)).toMatchObject({
      status: 0,
      output: expect.not.stringMatching(/missing|broken/),
    });
  });
});
