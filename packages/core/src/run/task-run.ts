import type { RunEvent, RunEventOf, RunEventType } from "../log/run-events.js";
import type { RunState } from "../log/run-state.js";
import type { RunReport } from "../report/run-report.js";
import type { EventHub } from "./event-hub.js";

/**
 * A run in progress. Iterate it (`for await (const event of run)`) or subscribe with `on`; await
 * `result` for the report. Events created before the first `await` are never missed.
 */
export class TaskRun implements AsyncIterable<RunEvent> {
  readonly runId: string;
  /** The final report; rejects with a `TaskLedgerError` when the run cannot proceed at all. */
  readonly result: Promise<RunReport>;
  private readonly hub: EventHub;
  private readonly liveState: () => RunState | undefined;

  /** @internal Hosts get runs from `Manager.start`. */
  constructor(
    runId: string,
    hub: EventHub,
    execute: () => Promise<RunReport>,
    liveState: () => RunState | undefined = () => undefined,
  ) {
    this.runId = runId;
    this.hub = hub;
    this.liveState = liveState;
    // Start on a later tick so listeners and iterators attached right after `start` see it all.
    this.result = new Promise<void>((resolve) => setImmediate(resolve)).then(execute).then(
      (report) => {
        hub.close();
        return report;
      },
      (error: unknown) => {
        hub.close(error);
        throw error;
      },
    );
    // A host that only listens to events must not crash on an unhandled rejection.
    this.result.catch(() => {});
  }

  /**
   * A copy of the run's state as its records so far make it (the same fold `recoverRun` uses on
   * its log); `undefined` until the run has begun.
   */
  snapshot(): RunState | undefined {
    const state = this.liveState();
    return state === undefined ? undefined : structuredClone(state);
  }

  /** Calls `listener` for each event of `type` (or every event, with `*`); returns an unsubscribe. */
  on<K extends RunEventType>(type: K, listener: (event: RunEventOf<K>) => void): () => void;
  on(type: "*", listener: (event: RunEvent) => void): () => void;
  on(type: RunEventType | "*", listener: (event: never) => void): () => void {
    return this.hub.on(type, listener as (event: RunEvent) => void);
  }

  /** The run's events from now until it ends; throws the run's error, if it has one, at the end. */
  events(): AsyncIterableIterator<RunEvent> {
    return this.hub.iterate();
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    return this.hub.iterate();
  }
}
