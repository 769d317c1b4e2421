import { lstatSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { real, strictlyUnder } from "./path-relations.js";

/**
 * The top of the worktree (or repository) `dir` is in: the nearest directory at or above it that
 * holds a `.git`, where git's own search stops; undefined outside one. A few `lstat`s, no git.
 */
export function worktreeTop(dir: string): string | undefined {
  for (let at = resolve(dir); ; at = dirname(at)) {
    if (lstatSync(join(at, ".git"), { throwIfNoEntry: false })) return at;
    if (dirname(at) === at) return undefined;
  }
}

/** What a launch's policy adds so that the worktrees it works in are whole inside it. */
export interface RoomReads {
  /** The worktrees' tops inside a denied directory: read back, read-only. */
  read: string[];
  /** The launch's write paths beneath those tops, hidden once more (on Linux; see below). */
  deny: string[];
}

/**
 * A worktree a launch works in may lie in a directory no launch reads (the slots, in the cache
 * directory). The runtime hides such a directory under a tmpfs and binds back the paths the launch
 * is given, and only those: a package directory came back alone, its worktree's top (the `.git`
 * file, the root `package.json`) stayed hidden, and the package was a mount point with nothing
 * above it, at which git's search for the repository stops ("not a git repository (or any parent
 * up to mount point …/packages) Stopping at filesystem boundary").
 *
 * So the top is read back too, read-only. On Linux the runtime binds back the write paths first
 * and the read paths after, so the top would land over the package bound writable beneath it:
 * each write path beneath a top is then denied as well, a deeper tmpfs the runtime mounts after
 * the top's, and binds the write path back over it, writable, on top. The write rules are the
 * launch's as before; the rest of the denied directory stays hidden, slots made later included.
 */
export function roomReads(
  deny: readonly string[],
  rooms: readonly string[],
  write: readonly string[],
): RoomReads {
  const denied = deny.map(real);
  const read = [...new Set(rooms.map(real))].filter((room) =>
    denied.some((entry) => strictlyUnder(room, entry)),
  );
  if (read.length === 0 || process.platform !== "linux") return { read, deny: [] };
  const beneath = write.filter((path) => read.some((room) => strictlyUnder(real(path), room)));
  return { read, deny: [...new Set(beneath)] };
}
