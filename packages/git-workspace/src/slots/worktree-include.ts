import { copyFile, lstat, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, normalize } from "node:path";
import { git, splitNul } from "../git/git.js";

/** The file at a repository's top listing ignored files every worktree gets (Claude Code's convention). */
export const worktreeIncludeFile = ".worktreeinclude";

// Local config, not data: past these bounds the rest is left out, and the run says how many.
const maxIncludedFiles = 1000;
const maxIncludedBytes = 64 * 1024 * 1024;

export interface IncludedFiles {
  /** Paths relative to the repository's top. */
  files: string[];
  /** Candidates left out: past the bounds, or not regular files (symlinks are never followed). */
  skipped: number;
}

/**
 * The ignored files `.worktreeinclude` and `patterns` (gitignore syntax) name, relative to the
 * repository's top. Only files git ignores are candidates (tracked and merely untracked files
 * come with the base commit), only regular files (no symlink followed), none inside `exclude`
 * (the dependency directories, copied whole), none outside the repository.
 */
export async function findIncludedFiles(
  root: string,
  patterns: readonly string[],
  exclude: readonly string[],
  abortSignal?: AbortSignal,
): Promise<IncludedFiles> {
  const own = await readFile(join(root, worktreeIncludeFile), "utf8").catch(() => "");
  const lines = [...own.split(/\r?\n/), ...patterns].filter((line) => line.trim() !== "");
  if (lines.length === 0) return { files: [], skipped: 0 };
  const dir = await mkdtemp(join(tmpdir(), "taskledger-include-"));
  let matched: string[];
  try {
    const list = join(dir, "patterns");
    await writeFile(list, `${lines.join("\n")}\n`);
    // Untracked files the patterns match; then, of those, the ones the repository ignores.
    const candidates = await git(
      ["ls-files", "-z", "--others", "--ignored", `--exclude-from=${list}`],
      { cwd: root, abortSignal },
    );
    const names = splitNul(candidates.stdout).filter(
      (path) => !exclude.some((d) => path === d || path.startsWith(`${d}/`)),
    );
    if (names.length === 0) return { files: [], skipped: 0 };
    const ignored = await git(["check-ignore", "-z", "--stdin"], {
      cwd: root,
      input: `${names.join("\0")}\0`,
      okCodes: [1],
      abortSignal,
    });
    matched = splitNul(ignored.stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const files: string[] = [];
  let bytes = 0;
  let skipped = 0;
  for (const path of matched.sort()) {
    const inside = !isAbsolute(path) && !normalize(path).startsWith("..");
    const info = inside ? await lstat(join(root, path)).catch(() => undefined) : undefined;
    if (
      !info?.isFile() ||
      files.length >= maxIncludedFiles ||
      bytes + info.size > maxIncludedBytes
    ) {
      skipped++;
      continue;
    }
    bytes += info.size;
    files.push(path);
  }
  return { files, skipped };
}

/** Copies included files from the user's tree into a slot, replacing what an attempt left there. */
export async function copyIncludedFiles(
  root: string,
  slot: string,
  files: readonly string[],
): Promise<void> {
  for (const path of files) {
    const to = join(slot, path);
    await mkdir(dirname(to), { recursive: true });
    await rm(to, { force: true, recursive: true });
    await copyFile(join(root, path), to);
  }
}
