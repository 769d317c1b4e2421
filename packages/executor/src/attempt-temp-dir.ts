import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { isProcessAlive, sweepDeadProcessDirs } from "@taskledger/core";
import { processesWithEnvWhere, signalTracked } from "./process-tree.js";

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
export function sweepStaleAttemptDirs(parent: string): Promise<void> {
  killOrphans(parent);
  return sweepDeadProcessDirs(parent, attemptDirPrefix, removeDir);
}

/**
 * Kills what runs with its TMPDIR in an attempt or server directory whose owner is gone: agents,
 * servers and their tools left by a host killed with its watchdog (nothing else could stop them).
 */
function killOrphans(parent: string): void {
  const owned = new RegExp(`^TMPDIR=${escapeRegExp(join(parent, attemptDirPrefix))}(\\d+)-`);
  const orphans = processesWithEnvWhere((entry) => owned.test(entry)).filter(
    ({ entry }) => !isProcessAlive(Number(owned.exec(entry)![1])),
  );
  for (const orphan of orphans) signalTracked(orphan, "SIGKILL");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
