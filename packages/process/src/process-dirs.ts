import { mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { isProcessAlive } from "./process-alive.js";

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
