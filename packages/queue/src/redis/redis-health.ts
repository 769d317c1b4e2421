import { QueueError } from "@taskledger/core";
import type { Redis } from "ioredis";

/**
 * Watches one connection: when Redis has been unreachable for `boundMs` straight, everything
 * waiting on it is told with a `QueueError`, so a run fails instead of hanging.
 */
export class RedisHealth {
  private downSince: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<(error: QueueError) => void>();
  private readonly reconnects = new Set<() => void>();

  constructor(
    private readonly client: Redis,
    private readonly boundMs: number,
    private readonly where: string,
  ) {
    client.on("ready", () => this.up());
    client.on("close", () => this.down());
    client.on("end", () => this.down());
    // ioredis reports each failed reconnect as an error; the bound decides, not each error.
    client.on("error", () => {});
  }

  /** Calls `onLost` if Redis stays unreachable past the bound; returns what stops watching. */
  watch(onLost: (error: QueueError) => void, onReconnect?: () => void): () => void {
    if (this.downSince !== undefined && Date.now() - this.downSince >= this.boundMs) {
      onLost(this.lost());
      return () => {};
    }
    this.waiters.add(onLost);
    if (onReconnect) this.reconnects.add(onReconnect);
    return () => {
      this.waiters.delete(onLost);
      if (onReconnect) this.reconnects.delete(onReconnect);
    };
  }

  /** Resolves once Redis answers PING, or fails with a `QueueError` after the bound. */
  async ping(abortSignal?: AbortSignal): Promise<void> {
    let stopWatching = () => {};
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(this.lost()), this.boundMs);
        const onAbort = () => reject(abortSignal?.reason);
        // Removed once answered: a run's signal outlives many pings.
        stopWatching = () => {
          clearTimeout(timer);
          abortSignal?.removeEventListener("abort", onAbort);
        };
        abortSignal?.addEventListener("abort", onAbort, { once: true });
        this.client.ping().then(() => resolve(), reject);
      });
    } catch (error) {
      if (abortSignal?.aborted || QueueError.isInstance(error)) throw error;
      throw this.lost(error);
    } finally {
      stopWatching();
    }
  }

  private lost(cause?: unknown): QueueError {
    return new QueueError(
      "redis-unreachable",
      `Redis at ${this.where} was unreachable for ${this.boundMs / 1000} s.`,
      { cause, isRetryable: true },
    );
  }

  private up(): void {
    const wasDown = this.downSince !== undefined;
    this.downSince = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    // A restarted Redis may have lost jobs: whoever waits on one looks again.
    if (wasDown) for (const reconnect of [...this.reconnects]) reconnect();
  }

  private down(): void {
    if (this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.timer = setTimeout(() => {
      const error = this.lost();
      for (const waiter of [...this.waiters]) waiter(error);
    }, this.boundMs);
    this.timer.unref();
  }

  close(): void {
    clearTimeout(this.timer);
    this.waiters.clear();
    this.reconnects.clear();
  }
}
