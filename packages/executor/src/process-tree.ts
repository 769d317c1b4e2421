import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

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
 * Signals all an attempt started: the process group its leader leads and every process tracked
 * under it. The one way an attempt is killed, by the executor, on the host's exit and by the
 * watchdog after the host's death.
 */
export function signalAttempt(
  leader: number,
  tracked: Iterable<TrackedProcess>,
  signal: NodeJS.Signals,
): void {
  signalGroup(leader, signal);
  for (const process of tracked) signalTracked(process, signal);
}

/** True while the attempt's group or any tracked process of it (the same process, not a reused pid) runs. */
export function attemptAlive(leader: number, tracked: Iterable<TrackedProcess>): boolean {
  if (groupAlive(leader)) return true;
  for (const process of tracked) if (startTimeOf(process.pid) === process.startTime) return true;
  return false;
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
 * Live processes whose environment holds `marker` (Linux; elsewhere none): what a dead server's
 * tools left running, re-parented and so no longer its descendants, found by the directories
 * every process it started inherits.
 */
export function processesWithEnv(marker: string): TrackedProcess[] {
  if (process.platform !== "linux") return [];
  const found: TrackedProcess[] = [];
  for (const row of procTable()) {
    if (row.pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${row.pid}/environ`, "latin1").includes(marker)) {
        found.push({ pid: row.pid, startTime: row.startTime });
      }
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}

interface Row {
  pid: number;
  ppid: number;
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
    return { pid, ppid: Number(fields[1]), startTime: fields[19] ?? "" };
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
      startTime: (match[3] ?? "").trim(),
    }));
}

/** When `pid` started, in the OS's own units; `undefined` when no such process runs. */
export function startTimeOf(pid: number): string | undefined {
  if (process.platform === "linux") return readStat(pid)?.startTime;
  return psTable().find((row) => row.pid === pid)?.startTime;
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
