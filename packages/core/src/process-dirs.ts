import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * True while process `pid` runs (as any user); this process counts as running. A zombie (killed,
 * not yet reaped by its parent) holds nothing any more and counts as gone.
 */
export function isProcessAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const end = stat.lastIndexOf(")");
    return stat.slice(end + 2, end + 3) === "Z";
  } catch (error) {
    // Gone between the two looks.
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/**
 * A new directory `<parent>/<prefix><pid>-XXXXXX`, named after this process so a later process can
 * tell a leftover (its owner killed with `kill -9`) from one in use.
 */
export function createProcessDir(parent: string, prefix: string): Promise<string> {
  return mkdtemp(join(parent, `${prefix}${process.pid}-`));
}

/**
 * Removes the directories under `parent` named `<prefix><pid>-…` whose process is gone; any other
 * process's directory, while it runs, is left alone. `remove` defaults to a plain recursive rm.
 */
export async function sweepDeadProcessDirs(
  parent: string,
  prefix: string,
  remove: (path: string) => Promise<void> = (path) =>
    rm(path, { recursive: true, force: true, maxRetries: 2 }).catch(() => {}),
): Promise<void> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  const owned = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(\\d+)-`);
  const stale = names.filter((name) => {
    const owner = owned.exec(name)?.[1];
    return owner !== undefined && !isProcessAlive(Number(owner));
  });
  await Promise.all(stale.map((name) => remove(join(parent, name))));
}
