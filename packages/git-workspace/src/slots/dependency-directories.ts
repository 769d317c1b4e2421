import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { git, splitNul } from "../git/git.js";

// Ignored directories an install makes, which checks and agents need and a worktree lacks.
const dependencyNames = new Set(["node_modules", ".venv", "venv"]);
// A monorepo has one per package; past this many the rest are left to a setup command.
const maxDependencyDirectories = 200;

/**
 * The ignored dependency directories in the user's tree, relative to the repository's top:
 * `node_modules` at any depth (not inside another), and Python virtual environments (`.venv`,
 * `venv`, or any ignored directory holding a `pyvenv.cfg`).
 */
export async function findDependencyDirectories(
  root: string,
  abortSignal?: AbortSignal,
): Promise<string[]> {
  // `--directory` names a wholly ignored directory once instead of listing its files.
  const { stdout } = await git(
    ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
    { cwd: root, abortSignal },
  );
  const found: string[] = [];
  for (const entry of splitNul(stdout)) {
    if (!entry.endsWith("/")) continue;
    const path = entry.slice(0, -1);
    const name = basename(path);
    // A directory ignored only file by file (a venv's own `.gitignore` of `*`) is listed with
    // its contents (in path order): what lies inside a dependency directory comes with it.
    if (found.some((dir) => path.startsWith(`${dir}/`))) continue;
    const isDependency = dependencyNames.has(name) || existsSync(join(root, path, "pyvenv.cfg"));
    if (isDependency) found.push(path);
    if (found.length >= maxDependencyDirectories) break;
  }
  return found.sort();
}
