import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";

/** Where `path` really is (its links resolved), or the path itself when it does not resolve. */
export function real(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return resolve(path);
  }
}

/** `path` lies inside `dir`, not at it. */
export function strictlyUnder(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** `path` is `dir` or lies inside it. */
export function atOrUnder(path: string, dir: string): boolean {
  return resolve(path) === resolve(dir) || strictlyUnder(path, dir);
}
