import { mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/** Every attempt directory's name starts with this, then the owning process's pid and a dash. */
export const attemptDirPrefix = "taskledger-opencode-";

/** How long removing one directory may take before it is left for the next sweep. */
const removeTimeoutMs = 10_000;

/**
 * Creates an attempt's own directory under `parent`, named after this process so that a later
 * process can tell a leftover from one in use. A directory kept for diagnosis is named without
 * the pid, so no sweep removes it.
 */
export function createAttemptRoot(parent: string, keep: boolean): Promise<string> {
  const owner = keep ? "kept" : String(process.pid);
  return mkdtemp(join(parent, `${attemptDirPrefix}${owner}-`));
}

/** Removes a directory and all in it; bounded, and never throws (a leftover is swept later). */
export async function removeDir(path: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const removing = rm(path, { recursive: true, force: true, maxRetries: 2 }).catch(() => {});
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, removeTimeoutMs);
    timer.unref();
  });
  await Promise.race([removing, bound]);
  clearTimeout(timer);
}

/**
 * Removes the attempt directories under `parent` whose owning process is gone (a crash, a
 * `kill -9`): any other process's directory, while it runs, is left alone.
 */
export async function sweepStaleAttemptDirs(parent: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  const stale = names.filter((name) => {
    const owner = new RegExp(`^${attemptDirPrefix}(\\d+)-`).exec(name)?.[1];
    return owner !== undefined && !processAlive(Number(owner));
  });
  await Promise.all(stale.map((name) => removeDir(join(parent, name))));
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
