import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type AttemptResult,
  createManager as createCoreManager,
  type ExecuteOptions,
  type Executor,
  emptyUsage,
  type Manager,
  type ManagerOptions,
} from "@taskledger/core";
import { createGitRepo } from "@taskledger/testing";
import { expect } from "vitest";
import { gitWorkspaces } from "../git-workspaces.js";
import { poolDirectory } from "../slots/slot-pool.js";

/** Runs git in `cwd` for a test and returns its trimmed output. */
export function sh(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" },
  }).trim();
}

/** A new repository with `files` committed on `main`. */
export function makeRepo(files: Record<string, string>): string {
  const dir = createGitRepo(mkdtempSync(join(tmpdir(), "taskledger-repo-")), files);
  // Tests that commit on top (a merge in progress) commit as a user of their own.
  sh(dir, "config", "user.email", "user@example.test");
  sh(dir, "config", "user.name", "User");
  return dir;
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

export function read(dir: string, path: string): string {
  return readFileSync(join(dir, path), "utf8");
}

/** What the user would lose if it changed: index bytes, refs under refs/heads, HEAD, stash, tree. */
export function userState(repo: string): string {
  const hash = createHash("sha256");
  hash.update(readFileSync(join(repo, ".git", "index")));
  hash.update(sh(repo, "for-each-ref", "refs/heads", "refs/stash"));
  hash.update(sh(repo, "symbolic-ref", "HEAD"));
  hash.update(sh(repo, "status", "--porcelain=v1", "-uall"));
  hash.update(sh(repo, "diff"));
  return hash.digest("hex");
}

type Work = (cwd: string, options: ExecuteOptions) => Promise<Partial<AttemptResult> | undefined>;

/** An executor whose "agent" is a function per sub-task id: the workspace is the subject here. */
export function scriptedWorkExecutor(work: Record<string, Work>): Executor & {
  calls: { subTaskId: string; attempt: number; cwd: string }[];
} {
  const calls: { subTaskId: string; attempt: number; cwd: string }[] = [];
  return {
    calls,
    async run(_prompt, options) {
      calls.push({ subTaskId: options.subTask.id, attempt: options.attempt, cwd: options.cwd });
      const extra = (await work[options.subTask.id]?.(options.cwd, options)) ?? {};
      return {
        outcome: "finished",
        finalText: `did ${options.subTask.id}`,
        toolCalls: [],
        stepFinishReasons: ["stop"],
        filesChanged: [],
        usage: emptyUsage(),
        durationMs: 1,
        ...extra,
      };
    },
  };
}

// Core's fixtures, shared here rather than copied.
export { passedEntry, task } from "../../../core/src/test-support/sub-task-fixture.js";

/** Core's manager with this package's workspaces, as `taskledger`'s createManager makes it. */
export function createManager(options: ManagerOptions): Manager {
  return createCoreManager({ workspaces: gitWorkspaces(), ...options });
}

/**
 * What a run leaves registered besides the user's tree: only free slots, kept in the pool's
 * directory (none under the run's own temporary directory, none held).
 */
export async function onlyFreeSlotsLeft(repo: string, runId: string): Promise<string[]> {
  const pool = await poolDirectory(repo);
  const worktrees = sh(repo, "worktree", "list", "--porcelain")
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length))
    .slice(1);
  expect(worktrees.every((path) => path.startsWith(`${pool}/`))).toBe(true);
  expect(existsSync(join(tmpdir(), "taskledger-worktrees", runId))).toBe(false);
  const locks = existsSync(pool) ? readdirSync(pool).filter((f) => f.endsWith(".lock")) : [];
  expect(locks).toEqual([]);
  return worktrees;
}
