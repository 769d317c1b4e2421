import { EventEmitter } from "eventemitter3";
import type { RunEvent, RunEventOf, RunEventType } from "../log/run-events.js";

type Listener<K extends RunEventType> = (event: RunEventOf<K>) => void;

// Past this many unread events an iterator drops the oldest `agent-event`s (the only
// high-volume kind), so a reader that stalls cannot grow memory without bound.
const defaultMaxBuffered = 10_000;
// A late iterator replays every state change but only this many of the latest `agent-event`s.
const replayedAgentEvents = 1_000;

/**
 * Delivers a run's events to listeners and to async iterators. A listener that throws does not
 * stop the run or the other listeners; the first such error of a run is a process warning.
 */
export class EventHub {
  private readonly emitter = new EventEmitter();
  private readonly iterators = new Set<IteratorState>();
  private finished: { error?: unknown } | undefined;
  // What a late iterator replays: the state changes, and the latest agent events in a ring.
  private readonly changes: RunEvent[] = [];
  private readonly agentEvents: RunEvent[] = [];
  private agentEventsStart = 0;
  private warned = false;

  constructor(private readonly maxBuffered = defaultMaxBuffered) {}

  on<K extends RunEventType>(type: K | "*", listener: Listener<K>): () => void {
    const safe = (event: RunEventOf<K>) => {
      try {
        listener(event);
      } catch (error) {
        // Once a run: a listener that throws on every event would otherwise flood the output.
        if (this.warned) return;
        this.warned = true;
        process.emitWarning(
          `A taskledger event listener threw (later throws of this run are not reported): ${String(error)}`,
          "TaskLedgerWarning",
        );
      }
    };
    this.emitter.on(type, safe);
    return () => this.emitter.off(type, safe);
  }

  emit(event: RunEvent): void {
    this.remember(event);
    this.emitter.emit(event.type, event);
    this.emitter.emit("*", event);
    for (const state of this.iterators) state.push(event, this.maxBuffered);
  }

  /**
   * Events of earlier sessions of the run (its stored log, on resume): replayed to iterators, so
   * one started late sees the whole run from `run-started`, but never announced to listeners.
   */
  remembered(events: readonly RunEvent[]): void {
    for (const event of events) this.remember(event);
  }

  /** Ends every iterator: after its buffered events, it returns (or throws `error`). */
  close(error?: unknown): void {
    this.finished = error === undefined ? {} : { error };
    for (const state of this.iterators) state.end(this.finished);
    this.iterators.clear();
    this.emitter.removeAllListeners();
  }

  /**
   * The run's events from its first one: those already emitted are replayed (every state change,
   * the latest 1,000 agent events), then the rest as they come, also after the run has ended.
   */
  iterate(): AsyncIterableIterator<RunEvent> {
    const state = new IteratorState();
    for (const event of this.replay()) state.push(event, this.maxBuffered);
    if (this.finished) state.end(this.finished);
    else this.iterators.add(state);
    const iterators = this.iterators;
    return {
      next: () => state.next(),
      return: async () => {
        iterators.delete(state);
        state.end({});
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  private remember(event: RunEvent): void {
    if (event.type !== "agent-event") {
      this.changes.push(event);
      return;
    }
    if (this.agentEvents.length < replayedAgentEvents) {
      this.agentEvents.push(event);
      return;
    }
    this.agentEvents[this.agentEventsStart] = event;
    this.agentEventsStart = (this.agentEventsStart + 1) % replayedAgentEvents;
  }

  /** The remembered events in the order they were emitted (by `seq`). */
  private replay(): RunEvent[] {
    const agent = [
      ...this.agentEvents.slice(this.agentEventsStart),
      ...this.agentEvents.slice(0, this.agentEventsStart),
    ];
    const merged: RunEvent[] = [];
    let a = 0;
    for (const change of this.changes) {
      while (a < agent.length && agent[a]!.seq < change.seq) merged.push(agent[a++]!);
      merged.push(change);
    }
    while (a < agent.length) merged.push(agent[a++]!);
    return merged;
  }
}

class IteratorState {
  private buffer: RunEvent[] = [];
  private waiting: ((result: IteratorResult<RunEvent>) => void) | undefined;
  private failWaiting: ((error: unknown) => void) | undefined;
  private ended: { error?: unknown } | undefined;

  push(event: RunEvent, maxBuffered: number): void {
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = this.failWaiting = undefined;
      resolve({ done: false, value: event });
      return;
    }
    this.buffer.push(event);
    if (this.buffer.length > maxBuffered) {
      const index = this.buffer.findIndex((e) => e.type === "agent-event");
      if (index >= 0) this.buffer.splice(index, 1);
    }
  }

  end(ended: { error?: unknown }): void {
    if (this.ended) return;
    this.ended = ended;
    if (this.waiting && this.buffer.length === 0) {
      const resolve = this.waiting;
      const reject = this.failWaiting!;
      this.waiting = this.failWaiting = undefined;
      if (ended.error !== undefined) reject(ended.error);
      else resolve({ done: true, value: undefined });
    }
  }

  next(): Promise<IteratorResult<RunEvent>> {
    const event = this.buffer.shift();
    if (event) return Promise.resolve({ done: false, value: event });
    if (this.ended) {
      const { error } = this.ended;
      this.ended = {};
      return error !== undefined
        ? Promise.reject(error)
        : Promise.resolve({ done: true, value: undefined });
    }
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }
}
