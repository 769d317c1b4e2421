// Fixtures the queue's tests share. Not part of the package: tsconfig.build.json leaves this folder out.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AttemptResult, emptyUsage, type SubTask } from "@taskledger/core";
import { createGitRepo, type RedisServer, startRedisServer } from "@taskledger/testing";
import { afterAll, beforeAll } from "vitest";

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
  outcome,
  finalText: "done",
  toolCalls: [],
  stepFinishReasons: ["stop"],
  filesChanged: [],
  usage: emptyUsage(),
  durationMs: 1,
});

/** A repository holding `files` and a bare remote both sides reach, in a new temporary directory. */
export function repositoryWithRemote(
  prefix: string,
  files: Record<string, string> = { "base.txt": "base\n" },
) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const repo = join(root, "repo");
  const remote = join(root, "remote.git");
  createGitRepo(repo, files);
  execFileSync("git", ["init", "-q", "--bare", remote]);
  return { root, repo, remote };
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
