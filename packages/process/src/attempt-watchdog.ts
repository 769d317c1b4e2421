import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { signalAttempt, type TrackedProcess } from "./process-tree.js";

/** One line the host writes to its watchdog: a process to guard under an attempt, or an attempt done. */
export interface WatchdogMessage {
  leader?: number;
  process?: TrackedProcess;
  /** The environment entry every process of the attempt led by `leader` carries (its TMPDIR). */
  marker?: string;
  release?: number;
  /** The attempt's own directory (or its server's), removed once its processes are gone if the host dies. */
  dir?: string;
}

/** What the watchdog knows of one attempt. */
interface Guarded {
  tracked: TrackedProcess[];
  marker: string | undefined;
}

// The watchdog runs this package's own file: the compiled one, or the source when the host runs sources.
const script = fileURLToPath(
  new URL(`./watchdog-process${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url),
);

// The watchdogs with attempts running, behind one `exit` listener however many executors a host has.
const busy = new Set<AttemptWatchdog>();
const killBusyOnExit = () => {
  for (const watchdog of busy) watchdog.killAllNow();
};

/**
 * Makes sure no attempt outlives its host. While attempts run, a detached watchdog process holds a
 * pipe from the host; when the host dies, even by `kill -9`, the pipe closes and the watchdog kills
 * every attempt still registered (SIGTERM, then SIGKILL after the grace), removes their
 * directories (SIGTERM to the host leaves none behind) and exits. A host that
 * exits through `process.exit` kills them itself, synchronously, on its way out. The watchdog is
 * started with the first attempt and told to go (its input ends) when the last one ends.
 */
export class AttemptWatchdog {
  private child: ChildProcess | undefined;
  private readonly attempts = new Map<number, Guarded>();

  constructor(private readonly graceMs: number) {}

  /** Starts the watchdog if none runs; call it right before spawning an attempt, in the same tick. */
  prepare(): void {
    this.started();
  }

  /**
   * Guards `process` as part of the attempt led by `leader`; call it in the tick that spawned it.
   * `marker`, given with the leader, finds every process of the attempt, even one started after
   * the last `watch` (see `processesWithEnv`).
   */
  watch(leader: number, process: TrackedProcess, marker?: string, dir?: string): void {
    let guarded = this.attempts.get(leader);
    if (guarded === undefined) {
      guarded = { tracked: [], marker };
      this.attempts.set(leader, guarded);
      if (busy.size === 0) globalThis.process.on("exit", killBusyOnExit);
      busy.add(this);
    }
    guarded.tracked.push(process);
    this.send({
      leader,
      process,
      ...(marker === undefined ? {} : { marker }),
      ...(dir === undefined ? {} : { dir }),
    });
  }

  /** The attempt led by `leader` is over and its processes are gone (`undefined`: it never started). */
  release(leader: number | undefined): void {
    if (leader !== undefined && this.attempts.delete(leader)) this.send({ release: leader });
    if (this.attempts.size > 0) return;
    busy.delete(this);
    if (busy.size === 0) globalThis.process.off("exit", killBusyOnExit);
    // End of input with nothing guarded: the watchdog exits without killing anything.
    this.child?.stdin?.end();
    this.child = undefined;
  }

  /** SIGKILL every attempt still guarded, synchronously. */
  killAllNow(): void {
    for (const [leader, { tracked, marker }] of this.attempts) {
      signalAttempt(leader, tracked, "SIGKILL", marker);
    }
  }

  private send(message: WatchdogMessage): void {
    // A pipe write with nothing queued reaches the kernel in this call, before a kill can land.
    this.started().stdin?.write(`${JSON.stringify(message)}\n`);
  }

  private started(): ChildProcess {
    if (this.child !== undefined) return this.child;
    const flags = script.endsWith(".ts") ? ["--experimental-strip-types", "--no-warnings"] : [];
    const child = spawn(process.execPath, [...flags, script, String(this.graceMs)], {
      // Its own session: a signal to the host's terminal or process group must not reach it.
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
      // An Electron host's executable runs as plain Node with this.
      env: { ...process.env, ELECTRON_RUN_AS_NODE: "1" },
      windowsHide: true,
    });
    child.on("error", () => {
      // Cannot happen short of a missing Node executable; the host's exit hook still kills.
    });
    child.stdin?.on("error", () => {
      // The watchdog is gone; the host's exit hook still covers a normal exit.
    });
    // The watchdog never keeps its host alive.
    child.unref();
    (child.stdin as { unref?: () => void } | null)?.unref?.();
    this.child = child;
    return child;
  }
}
