import type { RunEvent } from "../log/run-events.js";

/**
 * Where a run's records go. The manager appends every state change and awaits the append before
 * announcing it, so a store that persists durably makes a run recoverable.
 */
export interface RunStore {
  append(runId: string, record: RunEvent): Promise<void>;
  read(runId: string): Promise<RunEvent[]>;
  /**
   * Claims the run for this process while it executes, so two processes never run (or resume)
   * the same run at once; rejects with `StoreError` when another live process holds it. Resolves
   * with the release. Optional: a store without it gives no such guarantee across processes.
   */
  lock?(runId: string): Promise<() => Promise<void>>;
}

/**
 * Keeps records in memory; the default when a host gives no store. At most `maxRuns` runs are
 * kept: past that, the oldest finished run is forgotten, so a long-lived server stays bounded.
 */
export class MemoryRunStore implements RunStore {
  private readonly runs = new Map<string, RunEvent[]>();
  private readonly maxRuns: number;

  constructor(options: { maxRuns?: number } = {}) {
    this.maxRuns = options.maxRuns ?? 100;
  }

  async append(runId: string, record: RunEvent): Promise<void> {
    let records = this.runs.get(runId);
    if (!records) {
      records = [];
      this.runs.set(runId, records);
      this.evict();
    }
    records.push(record);
  }

  async read(runId: string): Promise<RunEvent[]> {
    return [...(this.runs.get(runId) ?? [])];
  }

  private evict(): void {
    if (this.runs.size <= this.maxRuns) return;
    for (const [runId, records] of this.runs) {
      const last = records.at(-1)?.type;
      if (last === "run-finished" || last === "run-failed") {
        this.runs.delete(runId);
        if (this.runs.size <= this.maxRuns) return;
      }
    }
  }
}
