import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Removed when the process ends: normally, by an uncaught error, or by one of these signals.
const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const owned = new Set<string>();
let installed = false;

/**
 * Removes `path` (recursively) when this process ends however it ends: on `exit` (after an
 * uncaught error too) and on SIGINT, SIGTERM or SIGHUP, after which the signal does what it would
 * have done. Returns what removes it at once. For benches and test setups that build large trees.
 */
export function removeOnExit(path: string): () => void {
  owned.add(path);
  if (!installed) {
    installed = true;
    process.on("exit", removeAll);
    for (const signal of signals) {
      process.once(signal, () => {
        removeAll();
        // Another listener handles the signal its own way; else it ends the process as it would have.
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    }
  }
  return () => {
    owned.delete(path);
    remove(path);
  };
}

/** A new directory under the temp directory, removed when the process ends (`removeOnExit`). */
export function tempDirectory(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  removeOnExit(dir);
  return dir;
}

function removeAll(): void {
  for (const path of owned) remove(path);
  owned.clear();
}

function remove(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // A process still writing in it: nothing more can be done at exit.
  }
}
