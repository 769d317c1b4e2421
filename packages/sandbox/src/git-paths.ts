import { execFile } from "node:child_process";
import { join } from "node:path";

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

/** The git directories of `cwd`, or none outside a repository; bounded to 5 s. */
export function gitPaths(cwd: string): Promise<GitPaths> {
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
