import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { isProcessAlive, sweepDeadProcessDirs } from "@taskledger/core";
import { processesWithEnvWhere, signalTracked } from "@taskledger/process";

/** An opencode attempt directory's name starts with this, then the owning process's pid and a dash. */
export const attemptDirPrefix = "taskledger-opencode-";

/** The agents whose attempt directories (`taskledger-<agent>-<pid>-…`) the sweep looks for. */
const agentDirNames = ["opencode", "claude-code", "codex"] as const;

/** An agent an attempt directory is named after. */
export type AttemptDirAgent = (typeof agentDirNames)[number];

/** The start of the name of an attempt directory of `agent`. */
export function attemptDirPrefixOf(agent: string): string {
  return `taskledger-${agent}-`;
}

/** How long removing one directory may take before it is left for the next sweep. */
const removeTimeoutMs = 10_000;

/**
 * Creates an attempt's own directory under `parent`, named after this process so that a later
 * process can tell a leftover from one in use. A directory kept for diagnosis is named without
 * the pid, so no sweep removes it. Named after its agent (`taskledger-codex-<pid>-…`).
 */
export function createAttemptRoot(
  parent: string,
  keep: boolean,
  agent: AttemptDirAgent = "opencode",
): Promise<string> {
  const owner = keep ? "kept" : String(process.pid);
  return mkdtemp(join(parent, `${attemptDirPrefixOf(agent)}${owner}-`));
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
  killOrphans(parent);
  await Promise.all(
    agentDirNames.map((agent) =>
      sweepDeadProcessDirs(parent, attemptDirPrefixOf(agent), removeDir),
    ),
  );
}

/**
 * Kills what runs with its TMPDIR in an attempt or server directory whose owner is gone: agents,
 * servers and their tools left by a host killed with its watchdog (nothing else could stop them).
 */
function killOrphans(parent: string): void {
  const prefixes = agentDirNames.map((agent) =>
    escapeRegExp(join(parent, attemptDirPrefixOf(agent))),
  );
  const owned = new RegExp(`^TMPDIR=(?:${prefixes.join("|")})(\\d+)-`);
  const orphans = processesWithEnvWhere((entry) => owned.test(entry)).filter(
    ({ entry }) => !isProcessAlive(Number(owned.exec(entry)![1])),
  );
  for (const orphan of orphans) signalTracked(orphan, "SIGKILL");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
