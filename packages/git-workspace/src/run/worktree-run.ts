import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EnvironmentSettings, WorkspaceRecord } from "@taskledger/core";
import { git, splitNul } from "../git/git.js";
import { type GitRepository, snapshotTree } from "../git/git-repository.js";
import { runRefs } from "../git/run-refs.js";
import { killLeftoverSetup } from "../slots/setup-command.js";

export type WorktreeRecord = Extract<WorkspaceRecord, { kind: "worktree" }>;

/** Where a run's worktrees live when slots are not kept: outside the user's tree, by run. */
export function worktreesDir(runId: string): string {
  return join(tmpdir(), "taskledger-worktrees", runId);
}

/** Takes the user's tree as the run's base, without touching their tree, index, stash or branches. */
export async function startWorktreeRun(
  runId: string,
  repo: GitRepository,
  apply: boolean,
  environment: EnvironmentSettings,
  abortSignal?: AbortSignal,
): Promise<WorktreeRecord> {
  const tree = await snapshotTree(repo, abortSignal);
  const parents = repo.head ? ["-p", repo.head] : [];
  const base = (
    await git(["commit-tree", tree, ...parents, "-m", `taskledger: base of run ${runId}`], {
      cwd: repo.root,
      abortSignal,
    })
  ).stdout.trim();
  const refs = runRefs(runId);
  // Both refs in one transaction: a run never has a base without a tip.
  await git(["update-ref", "--stdin"], {
    cwd: repo.root,
    input: `update ${refs.base} ${base}\nupdate ${refs.tip} ${base}\n`,
    abortSignal,
  });
  return {
    kind: "worktree",
    root: repo.root,
    prefix: repo.prefix,
    base,
    branch: `taskledger/${runId}`,
    apply,
    environment,
  };
}

/**
 * Removes worktrees of this run that a stopped process left registered or on disk. A new run's
 * id was never registered; a host's id given again is only swept on disk (`close` prunes).
 */
export async function removeStale(root: string, runId: string, registered: boolean): Promise<void> {
  // A setup command a killed process left would go on writing into a slot removed below.
  killLeftoverSetup(runId);
  if (!registered) return rm(worktreesDir(runId), { recursive: true, force: true });
  const { stdout } = await git(["worktree", "list", "--porcelain", "-z"], { cwd: root });
  const marker = `/taskledger-worktrees/${runId}/`;
  for (const field of splitNul(stdout)) {
    if (!field.startsWith("worktree ")) continue;
    const path = field.slice("worktree ".length);
    if (!path.includes(marker)) continue;
    await git(["worktree", "remove", "--force", "--force", path], { cwd: root, okCodes: [128] });
    await rm(path, { recursive: true, force: true });
  }
  await rm(worktreesDir(runId), { recursive: true, force: true });
  await git(["worktree", "prune"], { cwd: root });
}
