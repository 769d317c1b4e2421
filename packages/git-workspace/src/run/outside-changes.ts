import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OutsideChanges } from "@taskledger/core";
import { git } from "../git/git.js";

// Paths named on an attempt's record; past this they are only counted.
export const maxOutsidePaths = 50;

/** Whether `path` (from the repository's top) is in the run's directory (`prefix`, "" at the top). */
export function isInside(path: string, prefix: string): boolean {
  return prefix === "" || path.startsWith(prefix);
}

/** What a record keeps of the paths left out: a bounded list and how many there were. */
export function outsideChanges(paths: readonly string[]): OutsideChanges | undefined {
  if (paths.length === 0) return undefined;
  return { paths: paths.slice(0, maxOutsidePaths), count: paths.length };
}

/**
 * `tree` with every change it makes against `from` outside the run's directory undone: only the
 * run's `cwd` (`prefix`) is ever committed, merged or applied, whatever the agent wrote elsewhere.
 * Returns the tree to keep and the paths left out (a rename across the edge is a delete and an
 * add: only the half inside is kept). Works in a temporary index; no work tree is touched.
 */
export async function keepInside(
  root: string,
  from: string,
  tree: string,
  prefix: string,
  abortSignal?: AbortSignal,
): Promise<{ tree: string; outside: string[] }> {
  if (prefix === "") return { tree, outside: [] };
  const { stdout } = await git(["diff-tree", "-r", "-z", "--no-renames", from, tree], {
    cwd: root,
    abortSignal,
  });
  // `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0`, one pair of fields per path.
  const fields = stdout.split("\0");
  const outside: string[] = [];
  let restore = "";
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [oldMode, , oldId] = fields[i]!.slice(1).split(" ");
    const path = fields[i + 1]!;
    if (isInside(path, prefix)) continue;
    outside.push(path);
    // Mode 0 (a path `from` did not have) removes the entry: the update-index convention.
    restore += `${oldMode} ${oldId}\t${path}\0`;
  }
  if (outside.length === 0) return { tree, outside };
  const dir = await mkdtemp(join(tmpdir(), "taskledger-inside-"));
  try {
    const env = { GIT_INDEX_FILE: join(dir, "index") };
    await git(["read-tree", tree], { cwd: root, env, abortSignal });
    await git(["update-index", "-z", "--index-info"], {
      cwd: root,
      env,
      input: restore,
      abortSignal,
    });
    const kept = (await git(["write-tree"], { cwd: root, env, abortSignal })).stdout.trim();
    return { tree: kept, outside };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
