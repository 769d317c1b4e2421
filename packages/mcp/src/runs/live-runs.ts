import { InvalidRequestError, type RunReport, type RunState, type TaskRun } from "@taskledger/core";
import type { ReviewBroker } from "@taskledger/ui";

/** A run this server process runs now (or ran since it started). */
export interface LiveRun {
  runId: string;
  run: TaskRun;
  directory: string;
  /** What the run's log held when it was resumed: its state until the resumed run has begun. */
  before: RunState | undefined;
  /** Aborting it stops the run; its log keeps it resumable. */
  controller: AbortController;
  /** Holds its pending plan review for `answer_plan_review`. */
  reviews: ReviewBroker;
  /** The client's user is being asked about the pending review (an elicitation form is open). */
  asking: boolean;
  /** Set once the run ended. */
  ended: { report: RunReport | undefined; error: string | undefined } | undefined;
}

/** The runs of this server: at most `maxRuns` at once. */
export class LiveRuns {
  readonly #runs = new Map<string, LiveRun>();

  constructor(readonly maxRuns: number) {}

  get(runId: string): LiveRun | undefined {
    return this.#runs.get(runId);
  }

  running(): LiveRun[] {
    return [...this.#runs.values()].filter((r) => !r.ended);
  }

  /** Throws a tool error when another run may not start now. */
  checkRoom(): void {
    const running = this.running();
    if (running.length >= this.maxRuns)
      throw new InvalidRequestError(
        `${running.length} run(s) are running (${running.map((r) => r.runId).join(", ")}), the most this server runs at once; wait for one or cancel it.`,
      );
  }

  add(live: Omit<LiveRun, "ended" | "asking">): LiveRun {
    const entry: LiveRun = { ...live, asking: false, ended: undefined };
    this.#runs.set(live.runId, entry);
    live.run.result.then(
      (report) => {
        entry.ended = { report, error: undefined };
      },
      (error: unknown) => {
        entry.ended = {
          report: undefined,
          error: error instanceof Error ? error.message : String(error),
        };
      },
    );
    return entry;
  }

  /** Stops every running run and waits until each has ended (its processes gone). */
  async stopAll(): Promise<LiveRun[]> {
    const running = this.running();
    for (const live of running) live.controller.abort();
    await Promise.allSettled(running.map((live) => live.run.result));
    return running;
  }
}
