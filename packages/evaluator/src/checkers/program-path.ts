import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";

/**
 * Where `execvp` would find `program`: a name with a slash from `cwd`, any other along `PATH`.
 * The error code is the one a failed spawn would give (`ENOENT`, or `EACCES` when only
 * files that cannot be run were found).
 */
export function programPath(
  program: string,
  cwd: string,
  path: string | undefined,
): { path: string } | { error: "ENOENT" | "EACCES" } {
  const candidates = program.includes("/")
    ? [isAbsolute(program) ? program : resolve(cwd, program)]
    : (path ?? "").split(delimiter).map((dir) => resolve(cwd, join(dir || ".", program)));
  let error: "ENOENT" | "EACCES" = "ENOENT";
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
      return { path: candidate };
    } catch {
      error = "EACCES";
    }
  }
  return { error };
}
