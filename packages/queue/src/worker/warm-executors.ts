import type { Executor } from "@taskledger/core";

/** What a job asks of the agent that runs it: jobs that ask the same share one executor. */
export interface JobAgentSettings {
  /** The job's agent model (`claude-code:sonnet`, `provider/model`); the worker's own when absent. */
  agentModel?: string;
}

/** How many executors a worker keeps between jobs, unless told otherwise. */
export const defaultKeptExecutors = 3;

interface Kept {
  executor: Executor;
  /** Jobs running on it now: a busy executor is never closed. */
  running: number;
}

/**
 * A worker's executors, kept between jobs so their agents stay warm (an opencode server already up
 * and booted for the worker's kept worktrees). Jobs with the same agent settings share one; past
 * `max`, the least recently used idle one is closed.
 */
export class WarmExecutors {
  // In order of last use, oldest first (a Map keeps insertion order).
  private readonly kept = new Map<string, Kept>();
  private readonly closing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly make: (settings: JobAgentSettings) => Executor,
    private readonly max = defaultKeptExecutors,
  ) {}

  /** The executor for `settings`, made on first use; call `release` when the job ends. */
  acquire(settings: JobAgentSettings): { executor: Executor; release: () => void } {
    if (this.closed) throw new Error("the worker's executors are closed");
    const key = JSON.stringify([settings.agentModel ?? null]);
    const entry = this.kept.get(key) ?? {
      executor: this.make(settings.agentModel ? { agentModel: settings.agentModel } : {}),
      running: 0,
    };
    // Put last: the most recently used.
    this.kept.delete(key);
    this.kept.set(key, entry);
    entry.running++;
    this.trim();
    let released = false;
    return {
      executor: entry.executor,
      release: () => {
        if (released) return;
        released = true;
        entry.running--;
        this.trim();
      },
    };
  }

  /** Executors kept now, busy or idle. */
  get size(): number {
    return this.kept.size;
  }

  /** Closes every executor (their servers stopped); the worker runs no job after this. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.kept.values()];
    this.kept.clear();
    await Promise.all([...all.map((entry) => closeQuietly(entry.executor)), ...this.closing]);
  }

  private trim(): void {
    for (const [key, entry] of this.kept) {
      if (this.kept.size <= this.max) return;
      if (entry.running > 0) continue;
      this.kept.delete(key);
      const closing = closeQuietly(entry.executor);
      this.closing.add(closing);
      void closing.then(() => this.closing.delete(closing));
    }
  }
}

// A failing close must not fail the job that pushed it out, nor the worker's own close.
async function closeQuietly(executor: Executor): Promise<void> {
  await executor.close?.().catch(() => {});
}
