import type { WorkspaceOutcome, WorkspaceRecord } from "@taskledger/core";
import { git } from "../git/git.js";
import { changedPaths, snapshotTree, treeOf } from "../git/git-repository.js";
import { keepInside } from "./outside-changes.js";

type WorktreeRecord = Extract<WorkspaceRecord, { kind: "worktree" }>;

// Beyond this a combined change is left on the branch rather than held in memory to apply.
const maxApplyPatchBytes = 64 * 1024 * 1024;

/** Leaves the result on `taskledger/<run>` and applies it to the user's tree when that is unchanged. */
export async function finishRun(
  record: WorktreeRecord,
  tip: string,
  apply: boolean,
): Promise<WorkspaceOutcome> {
  const { root, base, branch } = record;
  const outcome = (applied: boolean, note: string) => ({ branch, commit: tip, applied, note });
  if (tip === base) return outcome(false, "Nothing to apply: no sub-task completed.");
  await git(["update-ref", `refs/heads/${branch}`, tip], { cwd: root });
  const take = `git diff ${base.slice(0, 12)} ${branch} | git apply`;
  // Merges keep only the run's directory; a branch from an older log may hold more: never applied.
  const { tree: inside, outside } = await keepInside(root, base, tip, record.prefix);
  const files = await changedPaths(root, base, inside);
  if (files.length === 0) {
    return outcome(
      false,
      `Nothing to apply: the completed sub-tasks changed no file (branch ${branch}).`,
    );
  }
  if (!apply) return outcome(false, `Not applied (--no-apply): take it with \`${take}\`.`);
  const repo = { root, gitDir: await gitDirOf(root), prefix: record.prefix, head: undefined };
  const now = await snapshotTree(repo);
  if (now !== (await treeOf(root, base))) {
    return outcome(
      false,
      `Not applied: the working tree changed during the run. Take the result with \`${take}\`, or merge the branch ${branch}.`,
    );
  }
  const patch = await git(["diff", "--binary", "--no-renames", base, inside, "--"], {
    cwd: root,
    maxOutputBytes: maxApplyPatchBytes,
  }).catch(() => undefined);
  if (!patch) {
    return outcome(
      false,
      `Not applied: the change is too large to apply here; take it with \`${take}\`.`,
    );
  }
  const applied = await git(["apply", "--whitespace=nowarn", "-"], {
    cwd: root,
    input: patch.stdout,
    okCodes: [1],
  });
  if (applied.code !== 0) {
    return outcome(
      false,
      `Not applied: git apply refused it (${applied.stderr.trim().slice(0, 200)}); take it with \`${take}\`.`,
    );
  }
  const left =
    outside.length > 0
      ? ` ${outside.length} path(s) outside the run's directory were not applied (${outside.slice(0, 5).join(", ")}).`
      : "";
  return outcome(
    true,
    `Applied to the working tree as uncommitted changes (${files.length} file(s)); also on branch ${branch}.${left}`,
  );
}

async function gitDirOf(root: string): Promise<string> {
  return (await git(["rev-parse", "--absolute-git-dir"], { cwd: root })).stdout.trim();
}
