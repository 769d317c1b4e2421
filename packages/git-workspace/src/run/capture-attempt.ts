import type { AttemptCapture } from "@taskledger/core";
import { git } from "../git/git.js";
import { changedPaths } from "../git/git-repository.js";
import { keepInside, outsideChanges } from "./outside-changes.js";

/** Where an attempt worked and what its commit may hold. */
export interface CaptureRequest {
  /** The repository's top, where the attempt's ref is written. */
  root: string;
  /** The attempt's worktree. */
  path: string;
  /** The commit it started from: its commit's parent. */
  start: string;
  /** The run's directory from the top ("" at the top): nothing outside it is kept. */
  prefix: string;
  /** Paths never committed (the user's copied environment). */
  never: readonly string[];
  message: string;
  /** The ref that keeps the commit. */
  ref: string;
}

/**
 * Everything the attempt changed in the run's directory, as one commit on top of its start; what
 * it changed elsewhere in the repository is left out and named.
 */
export async function captureAttempt(
  request: CaptureRequest,
): Promise<AttemptCapture & { tree: string }> {
  const { root, path, start, prefix, never, message, ref } = request;
  // No signal: a cancelled attempt's work is still kept, and this takes a moment.
  await git(["add", "-A", "--", "."], { cwd: path });
  // The user's copied environment never travels with the work, even if un-ignored.
  if (never.length > 0) {
    await git(
      [
        "rm",
        "-r",
        "-q",
        "--cached",
        "--ignore-unmatch",
        "--pathspec-from-file=-",
        "--pathspec-file-nul",
      ],
      { cwd: path, input: never.map((p) => `:(top,literal)${p}\0`).join("") },
    );
  }
  const written = (await git(["write-tree"], { cwd: path })).stdout.trim();
  const { tree, outside } = await keepInside(path, start, written, prefix);
  const commit = (
    await git(["commit-tree", tree, "-p", start, "-m", message], { cwd: path })
  ).stdout.trim();
  // The ref and the list of files do not wait for each other.
  const [, filesChanged] = await Promise.all([
    git(["update-ref", ref, commit], { cwd: root }),
    changedPaths(root, start, commit),
  ]);
  const left = outsideChanges(outside);
  return {
    commit,
    tree,
    filesChanged,
    ...(left ? { outsideCwd: left } : {}),
  };
}
