// Fixtures the queue's tests share. Not part of the package: tsconfig.build.json leaves this folder out.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AttemptResult, SubTask } from "@taskledger/core";
import { createGitRepo, gitIn, type RedisServer, startRedisServer } from "@taskledger/testing";
import { afterAll, beforeAll } from "vitest";
// Core's fixture, shared here rather than copied.
import { finishedResult } from "../../../core/src/test-support/memory-workspaces.js";

/** A sub-task with nothing but its id (and a title, when given). */
export const subTask = (id: string, title = id): SubTask => ({
  id,
  title,
  description: "",
  successCriteria: [],
  dependsOn: [],
  checks: [],
});

/** What a fake agent returns: an attempt that ended as `outcome`, having done nothing else. */
export const attemptResult = (outcome: AttemptResult["outcome"] = "finished"): AttemptResult => ({
  ...finishedResult(),
  outcome,
});

/**
 * A repository holding `files` and a bare remote both sides reach, in a new temporary directory;
 * `worktree(name)` adds a detached worktree at its commit there (what core gives an attempt).
 */
export function repositoryWithRemote(
  prefix: string,
  files: Record<string, string> = { "base.txt": "base\n" },
) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const repo = join(root, "repo");
  const remote = join(root, "remote.git");
  createGitRepo(repo, files);
  execFileSync("git", ["init", "-q", "--bare", remote]);
  const worktree = (name: string) => {
    const path = join(root, name);
    gitIn(repo, "worktree", "add", "-q", "--detach", path, "main");
    return path;
  };
  return { root, repo, remote, worktree };
}

/** A real Redis for the enclosing `describe`: started before its tests, stopped after. */
export function redisForTests(): () => RedisServer {
  let redis: RedisServer | undefined;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  return () => redis as RedisServer;
}
