import { buildDependencyContext, type CompletedOutput } from "./dependency-context.js";
import type { ProgressEntry } from "./progress-entry.js";
import type { SubTaskStatus } from "./run-report.js";
import type { SubTask } from "./sub-task.js";
import type { TaskLedger } from "./task-ledger.js";

/** Where one sub-task of a run stands. */
export interface SubTaskState {
  subTask: SubTask;
  status: SubTaskStatus;
  queued: boolean;
  attempts: number;
  entry?: ProgressEntry;
  reason: string | null;
  /** Dependencies not completed yet; the sub-task is ready at 0. */
  waitingOn: number;
  /** Attempts in the current step of the escalation ladder. */
  stepAttempts: number;
  /** The agent model of the current step, when it is an alternate one. */
  agentModel?: string;
  alternatesUsed: number;
  /** Replans in this sub-task's lineage: a replacement inherits its predecessor's count. */
  replans: number;
  replacedBy: string[] | null;
}

/**
 * The sub-tasks of a run, their dependencies and the outputs passed forward. Each completion only
 * looks at its own dependents, so dispatch stays linear in sub-tasks plus dependencies.
 */
export class RunGraph {
  /** In the order sub-tasks first appeared (the report's order), replaced ones included. */
  readonly states = new Map<string, SubTaskState>();
  private readonly byId = new Map<string, SubTask>();
  private readonly dependents = new Map<string, string[]>();
  private readonly outputs = new Map<string, CompletedOutput>();
  private completedCount = 0;

  /** Adds a sub-task; it is ready once its dependencies completed. */
  add(subTask: SubTask, replans: number): SubTaskState {
    this.byId.set(subTask.id, subTask);
    const dependsOn = new Set(subTask.dependsOn);
    const state: SubTaskState = {
      subTask,
      status: "pending",
      queued: false,
      attempts: 0,
      reason: null,
      waitingOn: [...dependsOn].filter((id) => this.states.get(id)?.status !== "completed").length,
      stepAttempts: 0,
      alternatesUsed: 0,
      replans,
      replacedBy: null,
    };
    this.states.set(subTask.id, state);
    for (const id of dependsOn) {
      const list = this.dependents.get(id);
      if (list) list.push(subTask.id);
      else this.dependents.set(id, [subTask.id]);
    }
    return state;
  }

  /** Gives a pending sub-task new text (an edit in review) without changing its place. */
  redefine(subTask: SubTask): void {
    const state = this.states.get(subTask.id);
    if (state?.status === "pending") state.subTask = subTask;
    if (state) this.byId.set(subTask.id, subTask);
  }

  /** Marks a sub-task completed and passes its output on; returns the dependents now ready. */
  complete(state: SubTaskState, entry: ProgressEntry): SubTaskState[] {
    state.status = "completed";
    state.entry = entry;
    this.outputs.set(state.subTask.id, {
      subTask: state.subTask,
      outputData: entry.outputData,
      order: this.completedCount++,
    });
    const ready: SubTaskState[] = [];
    for (const id of this.dependents.get(state.subTask.id) ?? []) {
      const dependent = this.states.get(id)!;
      if (--dependent.waitingOn === 0) ready.push(dependent);
    }
    return ready;
  }

  dependentsOf(id: string): readonly string[] {
    return this.dependents.get(id) ?? [];
  }

  /** Every sub-task downstream of `id` that has not started, in breadth-first order. */
  pendingDownstream(id: string): string[] {
    const found: string[] = [];
    const seen = new Set([id]);
    const frontier = [id];
    for (let next = frontier.shift(); next !== undefined; next = frontier.shift()) {
      for (const dependent of this.dependentsOf(next)) {
        if (seen.has(dependent) || this.states.get(dependent)?.status !== "pending") continue;
        seen.add(dependent);
        found.push(dependent);
        frontier.push(dependent);
      }
    }
    return found;
  }

  /** The plan as it stands: every sub-task a replan has not taken out. */
  current(): TaskLedger {
    return {
      subTasks: [...this.states.values()]
        .filter((s) => s.status !== "replaced")
        .map((s) => s.subTask),
    };
  }

  /** The outputs of `subTask`'s ancestors, within `budgetTokens`. */
  contextFor(subTask: SubTask, budgetTokens: number): string {
    return buildDependencyContext(subTask, this.byId, this.outputs, budgetTokens).text;
  }
}
