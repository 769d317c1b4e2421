// The watchdog's own process (see attempt-watchdog.ts). It reads what to guard from its stdin, a
// pipe from the host; end of input with attempts still guarded means the host died, so it kills them.
// It is started from the compiled `.js`, or from this `.ts` when the host runs the sources, so it
// imports nothing but Node's own modules and the process helpers, found next to itself.
import { rmSync } from "node:fs";
import { basename, isAbsolute } from "node:path";
import { createInterface } from "node:readline";
import type { WatchdogMessage } from "./attempt-watchdog.js";
import type * as ProcessTree from "./process-tree.js";

const extension = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
const tree = (await import(
  new URL(`./process-tree${extension}`, import.meta.url).href
)) as typeof ProcessTree;

const graceMs = Number(process.argv[2]) || 2000;
const guarded = new Map<
  number,
  { tracked: ProcessTree.TrackedProcess[]; marker?: string; dir?: string }
>();

// Detached from the host's terminal already; a stray hang-up or interrupt must not end the watch.
for (const signal of ["SIGINT", "SIGHUP"] as const) process.on(signal, () => {});

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
lines.on("line", (line) => {
  let message: WatchdogMessage;
  try {
    message = JSON.parse(line) as WatchdogMessage;
  } catch {
    return;
  }
  if (message.release !== undefined) guarded.delete(message.release);
  else if (message.leader !== undefined && message.process !== undefined) {
    const attempt = guarded.get(message.leader) ?? { tracked: [] };
    attempt.tracked.push(message.process);
    if (message.marker !== undefined) attempt.marker = message.marker;
    if (message.dir !== undefined) attempt.dir = message.dir;
    guarded.set(message.leader, attempt);
  }
});
lines.on("close", () => {
  if (guarded.size === 0) process.exit(0);
  // The host is gone with attempts still running: end them, SIGKILL after the grace. Each round
  // looks again for the attempts' marked processes, so one forked since the last is signalled too.
  const signalAll = (signal: NodeJS.Signals) => {
    for (const [leader, { tracked, marker }] of guarded) {
      tree.signalAttempt(leader, tracked, signal, marker);
    }
  };
  signalAll("SIGTERM");
  const deadline = Date.now() + graceMs;
  setInterval(() => {
    const alive = [...guarded].some(([leader, { tracked, marker }]) =>
      tree.attemptAlive(leader, tracked, marker),
    );
    // Bounded: a process stuck in the kernel past the grace and 5 s more is left.
    if (!alive || Date.now() > deadline + 5000) {
      removeDirs();
      process.exit(0);
    }
    signalAll(Date.now() < deadline ? "SIGTERM" : "SIGKILL");
  }, 50);
});

/** The dead host's attempt directories: only taskledger's own, absolute, as the host named them. */
function removeDirs(): void {
  for (const { dir } of guarded.values()) {
    if (dir === undefined || !isAbsolute(dir) || !basename(dir).startsWith("taskledger-")) continue;
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // Left for the next sweep of dead processes' directories.
    }
  }
}
