import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AttemptSpace, RunWorkspace } from "@taskledger/core";
import { git } from "../git/git.js";
import { changedPaths } from "../git/git-repository.js";
import { isInside, outsideChanges } from "./outside-changes.js";

interface SharedRepository {
  root: string;
  gitDir: string;
  prefix: string;
}

/**
 * A shared run's workspace that says what each attempt's time changed outside the run's directory
 * of its git repository. Git cannot take such a change back without touching the user's own
 * files, so nothing is reverted: only the OS sandbox confines a shared run.
 */
export async function watchOutside(
  workspace: RunWorkspace,
  cwd: string,
  abortSignal?: AbortSignal,
): Promise<RunWorkspace> {
  const repo = await sharedRepository(cwd, abortSignal);
  // At the repository's top nothing of it is outside the run's directory.
  if (!repo || repo.prefix === "") return workspace;
  return {
    ...workspace,
    async attempt(request, signal) {
      const space = await workspace.attempt(request, signal);
      const before = await outsideTree(repo, signal).catch(() => undefined);
      if (before === undefined) return space;
      const watched: AttemptSpace = {
        ...space,
        async outside() {
          const after = await outsideTree(repo).catch(() => undefined);
          if (after === undefined) return undefined;
          // Inside paths differ only when the user's index did: not this attempt's doing.
          const paths = (await changedPaths(repo.root, before, after)).filter(
            (path) => !isInside(path, repo.prefix),
          );
          const found = outsideChanges(paths);
          return found && { ...found, shared: true };
        },
      };
      return watched;
    },
  };
}

/** The repository `cwd` is in, with no demand on its state (a shared run needs none). */
async function sharedRepository(
  cwd: string,
  abortSignal?: AbortSignal,
): Promise<SharedRepository | undefined> {
  const found = await git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--show-prefix"], {
    cwd,
    abortSignal,
    okCodes: [128],
  }).catch(() => undefined);
  if (found?.code !== 0) return undefined;
  const [root = "", gitDir = "", prefix = ""] = found.stdout.split("\n");
  return root && gitDir ? { root, gitDir, prefix } : undefined;
}

/**
 * Every path outside the run's directory as it is in the work tree now (tracked and untracked,
 * not ignored), as a git tree; through a copy of the user's index, which is not touched.
 */
async function outsideTree(repo: SharedRepository, abortSignal?: AbortSignal): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "taskledger-outside-"));
  try {
    const index = join(dir, "index");
    await copyFile(join(repo.gitDir, "index"), index).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    const env = { GIT_INDEX_FILE: index };
    const inside = `:(top,exclude,literal)${repo.prefix.replace(/\/$/, "")}`;
    await git(["add", "-A", "--", ":(top)", inside], { cwd: repo.root, env, abortSignal });
    return (await git(["write-tree"], { cwd: repo.root, env, abortSignal })).stdout.trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
