import { readdir, readFile, readlink } from "node:fs/promises";
import { isProcessAlive, commandLineOf as wordsOf } from "@taskledger/core";

/**
 * Live processes (Linux, from `/proc`) whose working directory or environment lies under `root`,
 * the caller excepted: what a run left running.
 */
export async function processesUnder(root: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const [environ, cwd] = await Promise.all([
      readFile(`/proc/${name}/environ`, "utf8").catch(() => ""),
      readlink(`/proc/${name}/cwd`).catch(() => ""),
    ]);
    if (environ.includes(root) || cwd.startsWith(root)) found.push(Number(name));
  }
  return found;
}

/** SIGKILLs what a test left under `root`; one that ended since it was listed is no error. */
export async function killProcessesUnder(root: string): Promise<void> {
  for (const pid of await processesUnder(root)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  }
}

/** A process that still runs; a zombie (dead, waiting for its parent to reap it) does not count. */
export function alive(pid: number): boolean {
  return isProcessAlive(pid);
}

/** A process's command line (arguments joined by NUL), or "" once it is gone. */
export function commandLineOf(pid: number): string {
  return wordsOf(pid).join("\0");
}

/**
 * Asks `check` every 50 ms until `done` holds or `tries` asks have gone by, and resolves with the
 * last answer: for what a test waits on a process or a file to do, bounded.
 */
export async function pollUntil<T>(
  check: () => Promise<T>,
  done: (value: T) => boolean,
  tries = 400,
): Promise<T> {
  let value = await check();
  for (let i = 0; i < tries && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await check();
  }
  return value;
}
