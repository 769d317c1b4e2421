import { ExecutorError, type Sandbox } from "@taskledger/core";
import type { OpencodeServer, ServerStartFailure } from "./opencode-server.js";

/** A server confined to one directory, in this sandbox. */
export interface ServerPin {
  directory: string;
  sandbox: Sandbox;
}

/**
 * Up to `size` running servers, each serving one attempt at a time (so everything a server starts
 * while it serves belongs to that attempt). An attempt takes an idle server, else starts one while
 * under `size`, else waits for one to come back. A server that failed is stopped, never reused.
 */
export class ServerPool {
  private readonly idle: OpencodeServer[] = [];
  // The directories each server has booted an instance for (bounded by maxAttemptsPerServer).
  private readonly served = new WeakMap<OpencodeServer, Set<string>>();
  // A confined server writes only in the directory it was started for, under its sandbox's rules:
  // it serves no other directory, nor an attempt under another sandbox.
  private readonly pinned = new WeakMap<OpencodeServer, ServerPin>();
  private readonly all = new Set<OpencodeServer>();
  private starting = 0;
  // Waiting attempts in order; a candidate's (`yields`) lets every other go first.
  private readonly waiters: { wake: () => void; yields: boolean }[] = [];
  // Attempts that are not candidates, woken and about to look for a server again.
  private woken = 0;
  private closed = false;
  // Each idle server's stop timer: a pool nobody uses lets its servers (and their memory) go.
  private readonly idleTimers = new Map<OpencodeServer, NodeJS.Timeout>();

  /** Servers started so far (each one's start-up is what a warm room saves). */
  started = 0;

  constructor(
    private size: number,
    private readonly startServer: (
      signal: AbortSignal,
      pin?: ServerPin,
    ) => Promise<OpencodeServer | ServerStartFailure>,
    private readonly stopServer: (server: OpencodeServer) => Promise<void>,
    /** A server is retired after this many attempts (each directory it saw stays loaded in it). */
    private readonly maxAttemptsPerServer: number,
    /** A server idle this long is stopped. */
    private readonly idleMs: number = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * A server for one attempt, or how starting one failed; rejects with an AbortError on abort. An
   * idle server that has served `directory` before comes first: opencode boots an instance per
   * directory (1–3 s), once per server.
   */
  async acquire(
    signal: AbortSignal,
    directory?: string,
    sandbox?: Sandbox,
    yields = false,
  ): Promise<OpencodeServer | ServerStartFailure> {
    const pin = sandbox && directory ? { directory, sandbox } : undefined;
    for (;;) {
      if (this.closed) throw new ExecutorError("the opencode server executor is closed");
      signal.throwIfAborted();
      if (this.defers(yields)) {
        await this.wait(signal, yields);
        continue;
      }
      const server = this.takeIdle(directory, pin);
      if (server !== undefined) {
        this.busy(server);
        if (server.ended === undefined) {
          if (!pin) this.serves(server, directory);
          return server;
        }
        this.drop(server);
        continue;
      }
      // Every idle one is of no use here (a confined one serves its own directory): the one idle
      // longest makes room.
      if (this.all.size + this.starting >= this.size && this.idle.length > 0) {
        this.drop(this.idle[0] as OpencodeServer);
      }
      if (this.all.size + this.starting < this.size) {
        const started = await this.start(signal, pin);
        if ("url" in started) {
          if (pin) this.pinned.set(started, pin);
          else this.serves(started, directory);
        }
        return started;
      }
      await this.wait(signal, yields);
    }
  }

  /**
   * An idle server for the attempt, taken out of the idle list: confined, the one started for its
   * directory; else one that has served the directory, else the last one back, never a confined one.
   */
  private takeIdle(directory: string | undefined, pin: ServerPin | undefined) {
    const at = pin
      ? this.idle.findIndex((idle) => {
          const own = this.pinned.get(idle);
          return own?.directory === pin.directory && own.sandbox === pin.sandbox;
        })
      : (() => {
          const seen = this.idle.findIndex(
            (idle) => directory && !this.pinned.has(idle) && this.served.get(idle)?.has(directory),
          );
          return seen !== -1 ? seen : this.idle.findLastIndex((idle) => !this.pinned.has(idle));
        })();
    return at === -1 ? undefined : this.idle.splice(at, 1)[0];
  }

  /** Siblings first, then candidates: one that yields takes nothing while another waits. */
  private defers(yields: boolean): boolean {
    return yields && (this.woken > 0 || this.waiters.some((w) => !w.yields));
  }

  /** Until a server comes back or a start fails; rejects with the signal's reason on abort. */
  private async wait(signal: AbortSignal, yields: boolean): Promise<void> {
    let woken = false;
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        wake: () => {
          signal.removeEventListener("abort", onAbort);
          // Until it looks again, a woken attempt that is not a candidate still goes first.
          if (!yields) {
            woken = true;
            this.woken++;
          }
          resolve();
        },
        yields,
      };
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal.reason);
      };
      this.waiters.push(waiter);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    if (woken) this.woken--;
  }

  /** Wakes the first waiting attempt that is not a candidate, else the first candidate. */
  private wakeNext(): void {
    const first = this.waiters.findIndex((w) => !w.yields);
    this.waiters.splice(first === -1 ? 0 : first, 1)[0]?.wake();
  }

  /**
   * Starts servers in the background until `count` (at most the pool's size) run or are starting,
   * so the first attempts find them ready. A start that fails is left to the attempt to meet.
   */
  warm(count: number, signal: AbortSignal): void {
    const missing = Math.min(count, this.size) - this.all.size - this.starting;
    for (let i = 0; i < missing && !this.closed && !signal.aborted; i++) {
      this.start(signal).then(
        (started) => {
          if ("url" in started) this.release(started, true);
        },
        () => {},
      );
    }
  }

  /** Gives a server back after an attempt; `healthy` false (or one worn out) is stopped instead. */
  release(server: OpencodeServer, healthy: boolean): void {
    if (
      !this.closed &&
      healthy &&
      this.all.size <= this.size &&
      server.ended === undefined &&
      server.attempts < this.maxAttemptsPerServer
    ) {
      this.idle.push(server);
      this.idleFrom(server);
    } else {
      this.drop(server);
    }
    this.wakeNext();
  }

  /** Stops every server; later `acquire` calls throw. */
  async close(): Promise<void> {
    this.closed = true;
    for (const server of [...this.idleTimers.keys()]) this.busy(server);
    for (const waiter of this.waiters.splice(0)) waiter.wake();
    this.idle.length = 0;
    await Promise.all([...this.all].map((server) => this.stopServer(server)));
    this.all.clear();
  }

  /** True when `process` is one of this pool's running servers (the same process, not a reused pid). */
  owns(process: { pid: number; startTime: string }): boolean {
    for (const server of this.all) {
      if (server.pid === process.pid && server.startTime === process.startTime) return true;
    }
    return false;
  }

  /**
   * Changes how many servers may run at once; idle ones over the new size are stopped, and
   * attempts waiting for a seat look again.
   */
  resize(size: number): void {
    this.size = Math.max(1, Math.floor(size));
    while (this.all.size > this.size && this.idle.length > 0)
      this.drop(this.idle[0] as OpencodeServer);
    for (const waiter of this.waiters.splice(0)) waiter.wake();
  }

  /** Servers running now (idle or serving). */
  get running(): number {
    return this.all.size;
  }

  private async start(
    signal: AbortSignal,
    pin?: ServerPin,
  ): Promise<OpencodeServer | ServerStartFailure> {
    this.starting++;
    try {
      const started = await this.startServer(signal, pin);
      if ("url" in started) {
        this.started++;
        this.all.add(started);
        if (this.closed) {
          this.drop(started);
          throw new ExecutorError("the opencode server executor is closed");
        }
      }
      return started;
    } finally {
      this.starting--;
      // A failed start frees its slot for the next waiter.
      this.wakeNext();
    }
  }

  private serves(server: OpencodeServer, directory: string | undefined): void {
    if (!directory) return;
    const served = this.served.get(server) ?? new Set<string>();
    served.add(directory);
    this.served.set(server, served);
  }

  /** Stops `server` once it has been idle `idleMs`; the timer never holds the host's event loop. */
  private idleFrom(server: OpencodeServer): void {
    if (!Number.isFinite(this.idleMs)) return;
    const timer = setTimeout(() => {
      this.idleTimers.delete(server);
      if (this.idle.includes(server)) this.drop(server);
    }, this.idleMs);
    timer.unref();
    this.idleTimers.set(server, timer);
  }

  private busy(server: OpencodeServer): void {
    clearTimeout(this.idleTimers.get(server));
    this.idleTimers.delete(server);
  }

  private drop(server: OpencodeServer): void {
    this.busy(server);
    this.all.delete(server);
    const at = this.idle.indexOf(server);
    if (at >= 0) this.idle.splice(at, 1);
    void this.stopServer(server);
  }
}
