import { describeError } from "../errors/describe-error.js";
import { StoreError } from "../errors/errors.js";
import { applyRunEvent } from "../log/apply-run-event.js";
import { type RunEvent, runLogVersion } from "../log/run-events.js";
import type { RunState } from "../log/run-state.js";
import type { RunStore } from "../store/run-store.js";
import type { EventHub } from "./event-hub.js";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event as the run makes it; the recorder adds the run id, sequence, time and version. */
export type NewRunEvent = DistributiveOmit<RunEvent, "runId" | "seq" | "time" | "v">;

/**
 * The one writer of a run's log. Each event is applied to the run's state at once (so decisions
 * made after `record` see it), then appended to the store and only then announced; appends are
 * serialised so the store and the listeners see one order. The first store failure is fatal.
 */
export class RunRecorder {
  private chain: Promise<void> = Promise.resolve();
  /** The store error that ended the run, if one did. */
  fatal: StoreError | undefined;
  /** Records made by this session. */
  recorded = 0;

  constructor(
    readonly state: RunState,
    private readonly store: RunStore,
    private readonly hub: EventHub,
    private readonly onFatal: (error: StoreError) => void,
  ) {}

  /** `agent-event`s are applied and announced but not stored: they are not state worth keeping. */
  record(event: NewRunEvent): Promise<void> {
    const full = {
      ...event,
      v: runLogVersion,
      runId: this.state.runId,
      seq: this.state.nextSeq,
      time: new Date().toISOString(),
    } as RunEvent;
    applyRunEvent(this.state, full);
    this.recorded++;
    const store = full.type !== "agent-event";
    const step = this.chain.then(async () => {
      if (this.fatal !== undefined) return;
      if (store) {
        try {
          await this.store.append(this.state.runId, full);
        } catch (cause) {
          this.fatal = StoreError.isInstance(cause)
            ? cause
            : new StoreError(`Could not append to the run store: ${describeError(cause)}`, {
                cause,
              });
          this.onFatal(this.fatal);
          return;
        }
      }
      this.hub.emit(full);
    });
    this.chain = step;
    return step;
  }

  /**
   * Announces an event without applying or storing it: a run refused before its first record
   * (a bad `cwd`, a run in use) still tells hosts that only forward events, and writes no log.
   */
  announce(event: NewRunEvent): void {
    this.hub.emit({
      ...event,
      v: runLogVersion,
      runId: this.state.runId,
      seq: this.state.nextSeq,
      time: new Date().toISOString(),
    } as RunEvent);
  }

  /** Resolves once everything recorded so far is stored and announced. */
  settled(): Promise<void> {
    return this.chain;
  }

  throwIfFatal(): void {
    if (this.fatal !== undefined) throw this.fatal;
  }
}
