import type { ProviderLimits } from "../governor/provider-limits.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { TaskLedger, TaskLedgerInput } from "../ledger/task-ledger.js";
import type { TraceRef } from "../log/run-events.js";
import type { RunState, SubTaskState } from "../log/run-state.js";
import type { ReviewPlan } from "../plan/plan-review.js";
import type { RunWorkspace } from "../ports/workspace.js";
import type { RunSettings } from "../settings/run-settings.js";
import type { Usage } from "../usage/usage.js";
import type { DispatchGate } from "./dispatch-gate.js";
import type { ResolvedManagerOptions } from "./manager-options.js";
import type { RunRecorder } from "./run-recorder.js";
import type { StopConditions } from "./stop-conditions.js";

export interface RunInput {
  runId: string;
  request: string;
  cwd: string;
  settings: RunSettings;
  /** A plan the host already has; skips the planning call. */
  plan?: TaskLedgerInput;
  /** Tokens the host's planning of `plan` took. */
  planUsage?: Usage;
  /** This run's plan review, instead of the manager's. */
  reviewPlan?: ReviewPlan;
  abortSignal?: AbortSignal;
  /** This session's trace context, logged with its first record. */
  trace?: TraceRef;
  /** The run's state folded from its log: the run continues it. */
  recovered?: RunState;
}

/** What became of a completed sub-task's work at the integration gate. */
export type Landing =
  | { landed: true }
  /** Sent back: a merge conflict or a broken gate; the entry replaces the completed one. */
  | { landed: false; entry: ProgressEntry }
  /** The run stopped while it waited or was checked: nothing landed, nothing was sent back. */
  | { stopped: true };

/** What the parts of one run share: its input, its state, its one writer and when to stop. */
export interface RunContext {
  options: ResolvedManagerOptions;
  input: RunInput;
  settings: RunSettings;
  state: RunState;
  recorder: RunRecorder;
  stop: StopConditions;
  /** Where attempts work and how their work reaches the run's branch. */
  workspace: RunWorkspace;
  /** Where completed work is checked on the merged result before it lands (the integration gate). */
  integration?: {
    land(s: SubTaskState, attempt: number, entry: ProgressEntry): Promise<Landing>;
  };
  /** Queues sub-tasks that have become ready to run. */
  schedule(ids: Iterable<string>): void;
  /** The run's provider governor: attempts and manager calls wait out a provider's limits. */
  limits: ProviderLimits;
  /**
   * Runs `work` (a wait that needs no agent) with the sub-task's concurrency slot lent to the next
   * one, then takes a slot again: no more than `concurrency` attempts ever run at once.
   */
  lendSlot?<T>(work: () => Promise<T>): Promise<T>;
  /** Sub-tasks on their way to the executor: a round's extra candidates wait for them. */
  gate?: DispatchGate;
  /** The project's commands run before any change, started while the planner thinks. */
  baseline?: { done: Promise<void>; stop(): void };
  /** Told the plan once it is made: slots and agents are warmed for its first wave. */
  planned?(ledger: TaskLedger): void;
}
