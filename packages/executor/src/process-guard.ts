import { groupAlive, listDescendants, signalAttempt, type TrackedProcess } from "./process-tree.js";

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
    if (groupAlive(this.pid)) this.refresh();
    this.signalAll("SIGKILL");
  }

  private refresh(): void {
    for (const process of listDescendants(this.pid)) {
      if (this.tracked.get(process.pid)?.startTime === process.startTime) continue;
      this.tracked.set(process.pid, process);
      this.onTracked(process);
    }
  }

  private signalAll(signal: NodeJS.Signals): void {
    signalAttempt(this.pid, this.tracked.values(), signal);
  }
}
