import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { isProcessAlive } from "./process-alive.js";

/** A process named by pid and start time, so a pid the OS gave again to another is not it. */
export interface ProcessIdentity {
  pid: number;
  /** In the OS's own units (Linux: clock ticks after boot; elsewhere `ps`'s `lstart`). */
  startTime?: string | undefined;
}

/** When `pid` started, in the OS's own units; `undefined` when no such process runs. */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (process.platform === "linux") {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      // The command name may hold spaces and parentheses; the fields after its last ')' do not.
      return text.slice(text.lastIndexOf(")") + 2).split(" ")[19];
    } catch {
      return undefined;
    }
  }
  const result = spawnSync("ps", ["-o", "lstart=", "-p", String(pid)], {
    encoding: "utf8",
    timeout: 5000,
  });
  const started = result.status === 0 ? result.stdout.trim() : "";
  return started === "" ? undefined : started;
}

/** A process's words (Linux `/proc`); none once it is gone, or elsewhere. */
export function commandLineOf(pid: number): string[] {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return text === "" ? [] : text.replace(/\0$/, "").split("\0");
  } catch {
    return [];
  }
}

/** This process, as a lock file records its holder. */
export function currentProcess(): Required<ProcessIdentity> {
  return { pid: process.pid, startTime: processStartTime(process.pid) ?? "" };
}

/**
 * True while the process `holder` names runs: alive, and (when its start time was recorded) started
 * then. A lock whose pid was given again after a restart (pid 1 in a container) holds nothing.
 */
export function isHolderAlive(holder: ProcessIdentity): boolean {
  if (!isProcessAlive(holder.pid)) return false;
  if (!holder.startTime) return true;
  const now = processStartTime(holder.pid);
  return now === undefined || now === holder.startTime;
}
