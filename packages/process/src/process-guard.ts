import {
  groupAlive,
  listDescendants,
  processesWithEnv,
  signalAttempt,
  signalTracked,
  type TrackedProcess,
} from "./process-tree.js";

export interface ProcessGuardOptions {
  /** Only the descendants are the attempt's; the leader (a server that serves more) stays up. */
  leaderStays?: boolean;
  /** Whether the leader has ended; default: its process group is gone. */
  leaderEnded?: () => boolean;
  /** The environment entry every process of the attempt carries: finds those no scan has seen. */
  marker?: string | undefined;
  /** Processes never the attempt's (a server's own, under it from before), left alone. */
  spare?: (process: TrackedProcess) => boolean;
}

/**
 * Watches everything an attempt's process starts, so that ending the attempt ends all of it: the
 * process group of opencode and every descendant seen while it ran, wherever its group.
 */
export class ProcessGuard {
  private readonly tracked = new Map<number, TrackedProcess>();
  private readonly poll: NodeJS.Timeout;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pid: number,
    pollMs: number,
    /** Told of each process as it is first seen, so a host can record it for after a crash. */
    private readonly onTracked: (process: TrackedProcess) => void = () => {},
    private readonly options: ProcessGuardOptions = {},
  ) {
    // Descendants are re-parented once opencode exits, so they are noted while it still runs.
    this.poll = setInterval(() => this.refresh(), pollMs);
    this.poll.unref();
  }

  /** SIGTERM to all of it now, SIGKILL after `graceMs`. */
  terminate(graceMs: number): void {
    this.refresh();
    this.signalAll("SIGTERM");
    this.killTimer ??= setTimeout(() => this.signalAll("SIGKILL"), graceMs);
  }

  /** SIGKILL whatever is left and stop watching; called once the leader has exited. */
  dispose(): void {
    clearInterval(this.poll);
    clearTimeout(this.killTimer);
    if (!this.leaderEnded()) this.refresh();
    this.signalAll("SIGKILL");
  }

  private leaderEnded(): boolean {
    return this.options.leaderEnded?.() ?? !groupAlive(this.pid);
  }

  private refresh(): void {
    if (this.options.leaderEnded?.()) return;
    for (const process of listDescendants(this.pid)) {
      if (this.tracked.get(process.pid)?.startTime === process.startTime) continue;
      if (this.options.spare?.(process)) continue;
      this.tracked.set(process.pid, process);
      this.onTracked(process);
    }
  }

  private signalAll(signal: NodeJS.Signals): void {
    const { leaderStays, marker } = this.options;
    if (!leaderStays) signalAttempt(this.pid, this.tracked.values(), signal, marker);
    else {
      for (const process of this.tracked.values()) signalTracked(process, signal);
      // The leader (a server serving more attempts) carries the marker too, and stays.
      if (marker !== undefined) {
        for (const process of processesWithEnv(marker)) {
          if (process.pid !== this.pid && !this.options.spare?.(process))
            signalTracked(process, signal);
        }
      }
    }
  }
}
