import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { processStartTime } from "./process-identity.js";

/** A process seen under the attempt, with its start time so a reused pid is never signalled. */
export interface TrackedProcess {
  pid: number;
  startTime: string;
}

/**
 * Every live descendant of `root`. opencode starts its tool commands in process groups of their
 * own, so killing opencode's group alone would leave them running.
 */
export function listDescendants(root: number): TrackedProcess[] {
  const table = process.platform === "linux" ? procTable() : psTable();
  const children = new Map<number, TrackedProcess[]>();
  for (const entry of table) {
    const list = children.get(entry.ppid) ?? [];
    list.push({ pid: entry.pid, startTime: entry.startTime });
    children.set(entry.ppid, list);
  }
  const found: TrackedProcess[] = [];
  const queue = [root];
  while (queue.length > 0 && found.length < 10_000) {
    const pid = queue.shift() as number;
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** Signals every process in the group led by `pid`; false when none is left. */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(process.platform === "win32" ? pid : -pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True while any process of the group led by `pid` is alive. */
export function groupAlive(pid: number): boolean {
  return signalGroup(pid, 0);
}

/**
 * Signals all an attempt started: the process group its leader leads, every process tracked
 * under it and, given the attempt's `marker` (an environment entry all its processes inherit),
 * every live process that carries it, however recently started. The one way an attempt is
 * killed, by the executor, on the host's exit and by the watchdog after the host's death.
 */
export function signalAttempt(
  leader: number,
  tracked: Iterable<TrackedProcess>,
  signal: NodeJS.Signals,
  marker?: string,
): void {
  signalGroup(leader, signal);
  for (const process of tracked) signalTracked(process, signal);
  if (marker !== undefined)
    for (const process of processesWithEnv(marker)) signalTracked(process, signal);
}

/**
 * True while the attempt's group, any tracked process of it (the same process, not a reused pid)
 * or any process carrying its `marker` runs; zombies waiting for a reaper do not count.
 */
export function attemptAlive(
  leader: number,
  tracked: Iterable<TrackedProcess>,
  marker?: string,
): boolean {
  if (process.platform === "linux") {
    if (procTable().some((row) => row.pgrp === leader && row.state !== "Z")) return true;
  } else if (groupAlive(leader)) return true;
  for (const process of tracked) if (isRunning(process)) return true;
  return marker !== undefined && processesWithEnv(marker).length > 0;
}

/** Signals a tracked process (and its group, when it leads one) if it is still the same process. */
export function signalTracked(tracked: TrackedProcess, signal: NodeJS.Signals): void {
  if (startTimeOf(tracked.pid) !== tracked.startTime) return;
  for (const target of [-tracked.pid, tracked.pid]) {
    try {
      process.kill(target, signal);
    } catch {
      // Already gone, or not a group leader.
    }
  }
}

/**
 * Live processes (Linux; elsewhere none) whose environment has the entry `marker` (`NAME=value`):
 * an attempt's processes, found by the temp directory every process it starts inherits, wherever
 * they were re-parented and whenever they started.
 */
export function processesWithEnv(marker: string): TrackedProcess[] {
  return processesWithEnvWhere((entry) => entry === marker).map(({ pid, startTime }) => ({
    pid,
    startTime,
  }));
}

/** Live processes (Linux) with an environment entry `matches` accepts, and that entry. */
export function processesWithEnvWhere(
  matches: (entry: string) => boolean,
): (TrackedProcess & { entry: string })[] {
  if (process.platform !== "linux") return [];
  const found: (TrackedProcess & { entry: string })[] = [];
  for (const row of procTable()) {
    if (row.pid === process.pid || row.state === "Z") continue;
    try {
      const environ = readFileSync(`/proc/${row.pid}/environ`, "utf8");
      const entry = environ.split("\0").find(matches);
      if (entry !== undefined) found.push({ pid: row.pid, startTime: row.startTime, entry });
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}

interface Row {
  pid: number;
  ppid: number;
  /** Process group; `ps` rows leave it 0. */
  pgrp: number;
  /** `Z` for a zombie; `ps` rows leave it "". */
  state: string;
  startTime: string;
}

function procTable(): Row[] {
  const rows: Row[] = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return rows;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) rows.push(stat);
  }
  return rows;
}

function readStat(pid: number): Row | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses; the fields after its last ')' do not.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return {
      pid,
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      state: fields[0] ?? "",
      startTime: fields[19] ?? "",
    };
  } catch {
    return undefined;
  }
}

function psTable(): Row[] {
  const result = spawnSync("ps", ["-A", "-o", "pid=,ppid=,lstart="], {
    encoding: "utf8",
    timeout: 5000,
  });
  if (result.status !== 0) return [];
  return result.stdout
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({
      pid: Number(match[1]),
      ppid: Number(match[2]),
      pgrp: 0,
      state: "",
      startTime: (match[3] ?? "").trim(),
    }));
}

/** When `pid` started, in the OS's own units; `undefined` when no such process runs. */
export function startTimeOf(pid: number): string | undefined {
  return processStartTime(pid);
}

/** True while `tracked` runs: the same pid and start time, and not a zombie waiting to be reaped. */
export function isRunning(tracked: TrackedProcess): boolean {
  if (process.platform !== "linux") return startTimeOf(tracked.pid) === tracked.startTime;
  try {
    const text = readFileSync(`/proc/${tracked.pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return fields[0] !== "Z" && fields[19] === tracked.startTime;
  } catch {
    return false;
  }
}

/** The environment entry that marks every process an attempt (or a server) started: its TMPDIR. */
export function attemptMarker(env: Record<string, string | undefined>): string | undefined {
  return env.TMPDIR === undefined ? undefined : `TMPDIR=${env.TMPDIR}`;
}

/**
 * Kills what a dead host's attempts left: each recorded process still running with the same start
 * time (and its group), and every process carrying a recorded marker, however late it started.
 * Resolves once they are gone, or after `timeoutMs`.
 */
export async function reclaimProcesses(
  processes: readonly (TrackedProcess & { marker?: string })[],
  timeoutMs: number,
): Promise<void> {
  const killed: TrackedProcess[] = [];
  for (const process of processes) {
    signalTracked(process, "SIGKILL");
    killed.push(process);
    if (process.marker === undefined) continue;
    for (const marked of processesWithEnv(process.marker)) {
      signalTracked(marked, "SIGKILL");
      killed.push(marked);
    }
  }
  await waitForExit(killed, timeoutMs);
}

/** Resolves once none of `processes` runs, or after `timeoutMs`: a signal is delivered, not awaited. */
export async function waitForExit(
  processes: readonly TrackedProcess[],
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processes.some(isRunning) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
