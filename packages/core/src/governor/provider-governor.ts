import { AbortedError } from "../errors/errors.js";

// The first wait when a provider gave no Retry-After; doubled for each limit in a row.
const firstBackoffMs = 2000;
// The longest wait a backoff reaches (a provider's own Retry-After may ask for longer).
const maxBackoffMs = 60_000;

/** One provider and model as the governor sees it: paused until a time, admitting `limit` at once. */
interface Lane {
  /** Work may start at this time (ms since the epoch) and not before. */
  pausedUntil: number;
  /** How many may run at once now: unbounded until a limit cuts it to one; answers grow it back. */
  limit: number;
  running: number;
  /** Limits in a row, each met after the last pause ended: the backoff's step. */
  step: number;
  waiters: (() => void)[];
}

/** A place at a provider, held while the work runs. */
export interface GovernorTicket {
  /** The provider answered (a model step finished): the lane may admit twice as many. */
  answered(): void;
  /** The work is over; its place is free. Idempotent. */
  release(): void;
}

/** What a limit did to its provider's lane. */
export interface GovernorPause {
  /** Work to the provider waits until then (ms since the epoch). */
  until: number;
  /** How long from now. */
  waitMs: number;
  /** False when the lane was already paused past `until` by an earlier limit (no new step). */
  extended: boolean;
}

/**
 * One governor per provider and model (a key), shared by a run's lanes and by the manager's own
 * calls: a rate limit pauses every start toward that key until the provider's `Retry-After` (or a
 * backoff with jitter), then lets work back in one at a time, doubling with each answer until
 * `maxConcurrency` (the run's), where it stops counting. A key never limited never waits.
 */
export class ProviderGovernor {
  private readonly lanes = new Map<string, Lane>();

  constructor(
    private readonly maxConcurrency: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Waits until `key` admits one more, then holds a place; rejects with `AbortedError` on abort. */
  async acquire(key: string, signal: AbortSignal): Promise<GovernorTicket> {
    const lane = this.laneOf(key);
    while (Date.now() < lane.pausedUntil || lane.running >= lane.limit) {
      if (signal.aborted) throw new AbortedError("Cancelled while waiting for the provider");
      await this.wait(lane, signal);
    }
    lane.running++;
    let released = false;
    let answered = false;
    return {
      answered: () => {
        if (answered || Date.now() < lane.pausedUntil) return;
        answered = true;
        lane.step = 0;
        if (lane.limit === Number.POSITIVE_INFINITY) return;
        // Doubled with each answer (a slow start); back at the run's concurrency it stops counting.
        lane.limit =
          lane.limit * 2 >= this.maxConcurrency ? Number.POSITIVE_INFINITY : lane.limit * 2;
        this.wake(lane);
      },
      release: () => {
        if (released) return;
        released = true;
        lane.running--;
        this.wake(lane);
      },
    };
  }

  /**
   * The provider refused work to `key`: every start waits until `retryAfterMs` from now (plus a
   * little jitter, so lanes do not return in step), or a doubling backoff with jitter when it gave
   * none; then one at a time. A limit met while the lane was paused (work started before the
   * pause) extends nothing and is no new step.
   */
  limited(key: string, retryAfterMs?: number): GovernorPause {
    const now = Date.now();
    const lane = this.laneOf(key);
    const paused = now < lane.pausedUntil;
    if (!paused) lane.step++;
    const backoff = Math.min(maxBackoffMs, firstBackoffMs * 2 ** Math.max(0, lane.step - 1));
    const waitMs =
      retryAfterMs !== undefined
        ? Math.round(retryAfterMs * (1 + 0.1 * this.random()))
        : Math.round(backoff * (0.5 + this.random()));
    lane.limit = 1;
    const until = now + waitMs;
    if (until <= lane.pausedUntil)
      return { until: lane.pausedUntil, waitMs: lane.pausedUntil - now, extended: false };
    lane.pausedUntil = until;
    // Waiters whose timers end sooner look again and wait for the new end.
    this.wake(lane);
    return { until, waitMs, extended: true };
  }

  /** Restores a pause a stopped run recorded (`until`, ms since the epoch): resumed runs keep waiting. */
  restore(key: string, until: number): void {
    if (until <= Date.now()) return;
    const lane = this.laneOf(key);
    lane.limit = 1;
    lane.pausedUntil = Math.max(lane.pausedUntil, until);
    this.wake(lane);
  }

  /** When work to `key` may start again (ms since the epoch), if it is paused now. */
  pausedUntil(key: string): number | undefined {
    const lane = this.lanes.get(key);
    return lane && lane.pausedUntil > Date.now() ? lane.pausedUntil : undefined;
  }

  /** True when a start toward `key` would wait now: paused, or at its limit after one. */
  wouldWait(key: string): boolean {
    const lane = this.lanes.get(key);
    return lane !== undefined && (Date.now() < lane.pausedUntil || lane.running >= lane.limit);
  }

  /** Wakes every waiter (the run is over: their signals are aborted). */
  close(): void {
    for (const lane of this.lanes.values()) this.wake(lane);
  }

  private laneOf(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { pausedUntil: 0, limit: Number.POSITIVE_INFINITY, running: 0, step: 0, waiters: [] };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private wake(lane: Lane): void {
    for (const waiter of lane.waiters.splice(0)) waiter();
  }

  // Woken by a place given back, a new limit or abort; while paused, also when the pause ends
  // (a timer of its own: one may fire a millisecond before `Date.now()` reaches the end).
  private wait(lane: Lane, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const left = lane.pausedUntil - Date.now();
      const timer = left > 0 ? setTimeout(() => done(), left + 1) : undefined;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      lane.waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
