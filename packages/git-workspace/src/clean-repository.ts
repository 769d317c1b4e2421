import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { WorkspaceError } from "@taskledger/core";
import { git, splitNul } from "./git/git.js";
import { findRepository } from "./git/git-repository.js";
import { listRunRefs, type RunRefs, removeRunRefs } from "./git/run-refs.js";
import { type ListedSlot, poolDirectory, SlotPool } from "./slots/slot-pool.js";

export interface CleanOptions {
  /** A directory in the repository. */
  cwd: string;
  /** Say what would go, remove nothing. */
  dryRun?: boolean;
  /** Also the refs (and worktrees) of runs that never ended: interrupted or cancelled runs, which could be resumed. */
  all?: boolean;
  abortSignal?: AbortSignal;
}

/** What `cleanRepository` removed, or would remove, and what it left and why. */
export interface CleanResult {
  root: string;
  /** Where the repository's slots are kept. */
  slotDirectory: string;
  slots: { removed: ListedSlot[]; held: ListedSlot[] };
  runs: { removed: RunRefs[]; kept: RunRefs[] };
  /** Worktrees of runs from before slots were kept (in the temporary directory), removed. */
  worktrees: string[];
  /** Disk the removed slots took, as last measured. */
  bytes: number;
}

/**
 * Removes what taskledger keeps for a repository: every slot no run holds, the refs of ended runs
 * (`refs/taskledger/<run>/…`; the branch `taskledger/<run>` stays), and worktrees runs left. Runs
 * that never ended keep theirs unless `all`; a run holding a slot (still running) always does.
 */
export async function cleanRepository(options: CleanOptions): Promise<CleanResult> {
  const { abortSignal } = options;
  const repo = await findRepository(options.cwd, abortSignal).catch((error: unknown) => {
    // Cleaning needs no branch: a detached HEAD or a merge in progress is no reason to refuse.
    const busy = ["detached-head", "operation-in-progress"];
    if (WorkspaceError.isInstance(error) && busy.includes(error.reason)) return undefined;
    throw error;
  });
  const root =
    repo?.root ??
    (
      await git(["rev-parse", "--show-toplevel"], { cwd: options.cwd, okCodes: [128] })
    ).stdout.trim();
  if (!root) {
    throw new WorkspaceError("not-a-repository", `${options.cwd} is not in a git repository.`);
  }
  const slotDirectory = await poolDirectory(root);
  const pool = existsSync(slotDirectory) ? await SlotPool.open(root) : undefined;
  const listed = (await pool?.list()) ?? [];
  const held = listed.filter((slot) => slot.heldBy);
  const free = listed.filter((slot) => !slot.heldBy);
  const running = new Set(held.map((slot) => slot.heldBy!.runId));

  const runs = await listRunRefs(root, abortSignal);
  const removable = (run: RunRefs) =>
    !running.has(run.runId) && (run.finishedAt !== undefined || options.all === true);
  const worktrees = await leftWorktrees(root, (runId) =>
    removable(runs.find((run) => run.runId === runId) ?? { runId, refs: 0 }),
  );

  let removedSlots = free;
  if (!options.dryRun) {
    removedSlots = (await pool?.prune(true)) ?? [];
    for (const run of runs.filter(removable)) await removeRunRefs(root, run.runId, abortSignal);
    for (const path of worktrees) {
      await git(["worktree", "remove", "--force", "--force", path], { cwd: root, okCodes: [128] });
      await rm(path, { recursive: true, force: true });
    }
    await git(["worktree", "prune"], { cwd: root });
  }
  return {
    root,
    slotDirectory,
    slots: { removed: removedSlots, held },
    runs: { removed: runs.filter(removable), kept: runs.filter((run) => !removable(run)) },
    worktrees,
    bytes: removedSlots.reduce((sum, slot) => sum + (slot.bytes ?? 0), 0),
  };
}

/** Worktrees registered under `taskledger-worktrees/<run>/` whose run may be cleaned. */
async function leftWorktrees(
  root: string,
  removable: (runId: string) => boolean,
): Promise<string[]> {
  const { stdout } = await git(["worktree", "list", "--porcelain", "-z"], { cwd: root });
  return splitNul(stdout)
    .filter((field) => field.startsWith("worktree "))
    .map((field) => field.slice("worktree ".length))
    .filter((path) => {
      const runId = /\/taskledger-worktrees\/([^/]+)\//.exec(path)?.[1];
      return runId !== undefined && removable(runId);
    });
}
