import type { RunEvent } from "./run-events.js";

/**
 * Where a run's records go. The manager appends every state change and awaits the append before
 * announcing it, so a store that persists durably makes a run recoverable.
 */
export interface RunStore {
  append(runId: string, record: RunEvent): Promise<void>;
  read(runId: string): Promise<RunEvent[]>;
}

/** Keeps records in memory; the default when a host gives no store. */
export class MemoryRunStore implements RunStore {
  private readonly runs = new Map<string, RunEvent[]>();

  async append(runId: string, record: RunEvent): Promise<void> {
    let records = this.runs.get(runId);
    if (!records) {
      records = [];
      this.runs.set(runId, records);
    }
    records.push(record);
  }

  async read(runId: string): Promise<RunEvent[]> {
    return [...(this.runs.get(runId) ?? [])];
  }
}
