import { type Dirent, lstatSync, readdirSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

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

/**
 * `deny` with every entry that holds one of `rooms` (the worktrees a launch works in) replaced by
 * what lies around them: each entry beside the path down to a room, level by level.
 *
 * The runtime hides a denied directory under a tmpfs and binds back only the launch's own paths:
 * a package directory inside a hidden slot came back alone, its worktree's top (the `.git` file,
 * the root `package.json`) stayed hidden, and the bind is a mount point at which git's search for
 * the repository stops ("Stopping at filesystem boundary"). Denied around it instead, the worktree
 * and the directories above it stay the real ones: git finds its top from a package, and every
 * write rule is the launch's as before. What is denied is listed when the launch starts; an entry
 * made there later (a new slot) is not hidden from it. A directory that cannot be listed, or a
 * room outside every entry, leaves the entry as it is.
 */
export function denyAround(deny: readonly string[], rooms: readonly string[]): string[] {
  const kept = [...new Set(rooms.map(real))];
  return deny.flatMap((entry) => {
    const at = real(entry);
    const inside = kept.filter((room) => strictlyUnder(room, at));
    return inside.length === 0 ? [entry] : (around(at, inside) ?? [entry]);
  });
}

/** Every entry of `dir` but the rooms and the directories down to them; undefined when unlisted. */
function around(dir: string, rooms: readonly string[]): string[] | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  const denied: string[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (rooms.includes(path)) continue;
    // A link is a name: what it points at is denied (or not) where it is; the runtime would
    // deny its target, which may be anywhere.
    if (entry.isSymbolicLink()) continue;
    const inside = rooms.filter((room) => strictlyUnder(room, path));
    if (inside.length === 0) {
      denied.push(path);
      continue;
    }
    const deeper = around(path, inside);
    if (deeper === undefined) return undefined;
    denied.push(...deeper);
  }
  return denied;
}

function real(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return resolve(path);
  }
}

function strictlyUnder(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
