import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { currentProcess, isHolderAlive, type ProcessIdentity } from "@taskledger/core";

/** An exclusive lock file naming this process; undefined when a live process holds it. */
export function takeLock(path: string): (() => void) | undefined {
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, JSON.stringify(currentProcess()));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: ProcessIdentity | undefined;
    try {
      holder = JSON.parse(readFileSync(path, "utf8")) as ProcessIdentity;
    } catch {
      // Being written this moment by another starting daemon: held; older, half-written: stale.
      const age = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0);
      if (age < 2000) return undefined;
    }
    if (holder !== undefined && isHolderAlive(holder)) {
      return undefined;
    }
    rmSync(path, { force: true });
  }
  return undefined;
}
