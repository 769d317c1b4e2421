import { existsSync } from "node:fs";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WorkspaceError } from "@taskledger/core";
import { git, splitNul } from "./git.js";

/** The git repository a run's directory is in, as `git rev-parse` tells it. */
export interface GitRepository {
  /** Top of the work tree. */
  root: string;
  /** This work tree's git directory (where its index and MERGE_HEAD live). */
  gitDir: string;
  /** The run's directory relative to `root`, with a trailing slash ("" at the top). */
  prefix: string;
  /** The commit HEAD points at; undefined in a repository with no commit yet. */
  head: string | undefined;
}

// Files git leaves in its directory while an operation waits for the user.
const operationMarkers: Record<string, string> = {
  MERGE_HEAD: "a merge",
  "rebase-merge": "a rebase",
  "rebase-apply": "a rebase or am",
  CHERRY_PICK_HEAD: "a cherry-pick",
  REVERT_HEAD: "a revert",
};

/**
 * The repository `cwd` is in, or undefined when it is in none. A bare repository, a detached HEAD
 * or an unfinished merge or rebase is a `WorkspaceError` naming it.
 */
export async function findRepository(
  cwd: string,
  abortSignal?: AbortSignal,
): Promise<GitRepository | undefined> {
  const probe = await git(["rev-parse", "--is-bare-repository", "--is-inside-work-tree"], {
    cwd,
    abortSignal,
    okCodes: [128],
  });
  if (probe.code === 128) {
    if (/not a git repository/i.test(probe.stderr)) return undefined;
    throw new WorkspaceError("git-failed", `git cannot read ${cwd}: ${probe.stderr.trim()}`);
  }
  const [bare, inside] = probe.stdout.trim().split("\n");
  if (bare === "true" || inside !== "true") {
    throw new WorkspaceError(
      "bare-repository",
      `${cwd} is in a bare repository or a git directory, not a work tree: run in a clone, or with isolation "shared".`,
    );
  }
  const paths = await git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-prefix"], {
    cwd,
    abortSignal,
  });
  const [root = "", gitDir = "", prefix = ""] = paths.stdout.split("\n");
  for (const [marker, what] of Object.entries(operationMarkers)) {
    if (existsSync(join(gitDir, marker))) {
      throw new WorkspaceError(
        "operation-in-progress",
        `The repository at ${root} is in the middle of ${what}: finish or abort it first, or run with isolation "shared".`,
      );
    }
  }
  const branch = await git(["symbolic-ref", "-q", "HEAD"], { cwd, abortSignal, okCodes: [1] });
  if (branch.code === 1) {
    throw new WorkspaceError(
      "detached-head",
      `The repository at ${root} has a detached HEAD: check out a branch first, or run with isolation "shared".`,
    );
  }
  const head = await git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], {
    cwd,
    abortSignal,
    okCodes: [1],
  });
  return {
    root,
    gitDir,
    prefix,
    head: head.code === 0 ? head.stdout.trim() : undefined,
  };
}

/**
 * The work tree as it is now (tracked changes, new and deleted files; not ignored ones) as a git
 * tree, written through a copy of the index so the user's index, tree and stash are not touched.
 */
export async function snapshotTree(
  repo: GitRepository,
  abortSignal?: AbortSignal,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "taskledger-index-"));
  const index = join(dir, "index");
  try {
    // A copy keeps git's stat cache, so only files changed since the user's last `add` are read.
    await copyFile(join(repo.gitDir, "index"), index).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    const env = { GIT_INDEX_FILE: index };
    await git(["add", "-A", "--", "."], { cwd: repo.root, env, abortSignal });
    return (await git(["write-tree"], { cwd: repo.root, env, abortSignal })).stdout.trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The tree a commit records. */
export async function treeOf(
  root: string,
  commit: string,
  abortSignal?: AbortSignal,
): Promise<string> {
  return (await git(["rev-parse", `${commit}^{tree}`], { cwd: root, abortSignal })).stdout.trim();
}

/** Paths that differ between two commits (or trees), relative to the repository's top. */
export async function changedPaths(
  root: string,
  from: string,
  to: string,
  abortSignal?: AbortSignal,
): Promise<string[]> {
  const { stdout } = await git(["diff", "--name-only", "--no-renames", "-z", from, to, "--"], {
    cwd: root,
    abortSignal,
  });
  return splitNul(stdout);
}

/**
 * What `commit` changed against its first parent, as a patch of at most `maxChars` characters (a
 * longer one is cut, saying so). For a run's own commits, whose ids it logged.
 */
export async function commitDiff(
  root: string,
  commit: string,
  maxChars: number,
  abortSignal?: AbortSignal,
  /** Shown against this commit, when not its parent (the run's base, for the whole change). */
  from?: string,
): Promise<string> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) {
    throw new WorkspaceError(
      "git-failed",
      `Not a commit id: ${JSON.stringify(commit.slice(0, 80))}`,
    );
  }
  const range = from && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(from) ? [from, commit] : undefined;
  const args = range
    ? ["diff", "--no-color", "--no-ext-diff", "--stat", "--patch", ...range]
    : ["show", "--no-color", "--no-ext-diff", "--format=", "--stat", "--patch", commit];
  const result = await git(args, { cwd: root, abortSignal, maxOutputBytes: maxChars * 4 }).catch(
    async () => {
      // Too large to show whole: the summary of what changed is still worth showing.
      const stat = await git(
        range
          ? ["diff", "--stat", ...range]
          : ["show", "--no-color", "--format=", "--stat", commit],
        {
          cwd: root,
          abortSignal,
        },
      );
      return { ...stat, stdout: `${stat.stdout}\n(The patch is too large to show here.)\n` };
    },
  );
  const text = result.stdout;
  return text.length <= maxChars
    ? text
    : `${text.slice(0, maxChars)}\n[… ${text.length - maxChars} characters cut …]\n`;
}

/** How many lines `to` adds and removes against `from`. */
export async function linesChanged(
  root: string,
  from: string,
  to: string,
  abortSignal?: AbortSignal,
): Promise<number> {
  const { stdout } = await git(["diff", "--numstat", "-z", "--no-renames", from, to], {
    cwd: root,
    abortSignal,
  });
  let lines = 0;
  for (const m of stdout.matchAll(/(\d+)\t(\d+)\t/g)) lines += Number(m[1]) + Number(m[2]);
  return lines;
}

/** A commit's tree and parents (as `commit-tree` arguments), from its header. */
export async function commitHeader(
  root: string,
  commit: string,
): Promise<{ tree: string; parents: string[] }> {
  const { stdout } = await git(["cat-file", "commit", commit], { cwd: root });
  const parents = [...stdout.matchAll(/^parent (\S+)$/gm)].flatMap((m) => ["-p", m[1]!]);
  const tree = /^tree (\S+)$/m.exec(stdout)?.[1] ?? (await treeOf(root, commit));
  return { tree, parents };
}
