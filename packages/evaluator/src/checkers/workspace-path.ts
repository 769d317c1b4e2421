import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import type { CheckResult } from "./checker.js";

/**
 * Resolves a check's path against the working directory, following symlinks, and refuses one
 * that leads outside it: declared checks come from a model and must not read the rest of the disk.
 * Returns `undefined` for a path outside; a path that does not exist resolves lexically.
 */
export async function resolveInside(cwd: string, path: string): Promise<string | undefined> {
  const root = await realpath(cwd).catch(() => resolve(cwd));
  const lexical = resolve(root, path);
  const real = await realpath(lexical).catch(() => lexical);
  const rel = relative(root, real);
  if (rel === "" || (!rel.startsWith("..") && !isAbsolute(rel))) return real;
  return undefined;
}

/** The verdict of a file check whose path leads outside the working directory. */
export function outsideWorkspace(shown: string): CheckResult {
  return {
    complete: false,
    detail: "the path leads outside the working directory; not checked",
    feedback: `The check on \`${shown}\` names a path outside the working directory, so it cannot pass.`,
  };
}
