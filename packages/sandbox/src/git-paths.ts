import { execFile } from "node:child_process";
import { lstatSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** What git in a directory needs of its repository inside the sandbox. */
export interface GitPaths {
  /** The repository's git directory: read for config, refs and objects. */
  read: string[];
  /**
   * A worktree's own index, HEAD and logs, and the shared object store: `add` and `commit` work,
   * while the user's branches, tags, config and hooks stay read-only (a hook written there would
   * run unconfined at the user's next git command).
   */
  write: string[];
}

/** Directories whose answer is kept: a run's slots and checks ask about a few, over and over. */
const cacheLimit = 256;

/**
 * `gitPaths` per directory, asked of git once (it spawns `git rev-parse`, a few ms under load, on
 * every launch otherwise) and again only when the `.git` that decides it changed: the nearest one
 * at or above the directory, a worktree's `.git` file (made again when the worktree is) by its
 * identity and content's size and time, a repository's `.git` directory by its identity.
 */
export class GitPathsCache {
  private readonly known = new Map<string, { stamp: string; paths: Promise<GitPaths> }>();

  constructor(private readonly limit = cacheLimit) {}

  get(cwd: string): Promise<GitPaths> {
    const key = resolve(cwd);
    const stamp = gitStamp(key);
    const hit = this.known.get(key);
    this.known.delete(key);
    const paths = hit?.stamp === stamp ? hit.paths : askGit(key);
    const entry = { stamp, paths };
    // Map order is use order: the least recently used directory goes first.
    this.known.set(key, entry);
    // No answer beside a `.git` (git timed out under load, or failed): asked again next time.
    if (hit?.paths !== paths && stamp !== "none") {
      void paths.then(({ read }) => {
        if (read.length === 0 && this.known.get(key) === entry) this.known.delete(key);
      });
    }
    if (this.known.size > this.limit) this.known.delete(this.known.keys().next().value as string);
    return paths;
  }
}

const shared = new GitPathsCache();

/** The git directories of `cwd`, or none outside a repository; bounded to 5 s; cached (above). */
export function gitPaths(cwd: string): Promise<GitPaths> {
  return shared.get(cwd);
}

/** What identifies the `.git` nearest `dir` (itself or an ancestor), or `none`. */
function gitStamp(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    const entry = lstatSync(join(at, ".git"), { throwIfNoEntry: false, bigint: true });
    if (entry !== undefined) {
      const changes = entry.isDirectory() ? "" : `:${entry.size}:${entry.mtimeNs}`;
      return `${at}:${entry.dev}:${entry.ino}${changes}`;
    }
    if (dirname(at) === at) return "none";
  }
}

function askGit(cwd: string): Promise<GitPaths> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
      { cwd, timeout: 5000, encoding: "utf8" },
      (error, stdout) => {
        const [gitDir, commonDir] = stdout?.trim().split("\n") ?? [];
        if (error || !gitDir || !commonDir) return resolve({ read: [], write: [] });
        // A linked worktree has a git directory of its own; the main one's is the user's.
        const write = [join(commonDir, "objects")];
        if (gitDir !== commonDir) write.push(gitDir);
        resolve({ read: [commonDir], write });
      },
    );
  });
}
