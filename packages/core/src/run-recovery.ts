import type { AttemptProcess, AttemptResult } from "./executor.js";
import type { ProgressEntry } from "./progress-entry.js";
import type { BudgetExhaustion, RunEvent } from "./run-events.js";
import type { RunReport, SubTaskStatus } from "./run-report.js";
import type { SubTask } from "./sub-task.js";
import type { TaskLedger } from "./task-ledger.js";
import { addUsage, emptyUsage, type Usage } from "./usage.js";

/** Where one sub-task stood when the log ends. */
export interface RecoveredSubTask {
  status: SubTaskStatus;
  attempts: number;
  entry?: ProgressEntry;
  reason: string | null;
  /** Completion order, for newest-first context passing. */
  order?: number;
  /** The last evaluated attempt, which a retry's prompt builds on. */
  previous?: { attempt: number; entry: ProgressEntry };
  /** An attempt that finished but whose evaluation (or the decision after it) was not logged. */
  carried?: { attempt: number; result: AttemptResult; entry?: ProgressEntry };
  /** An attempt that was running when the log ends: it is run again under a new number. */
  interrupted?: { attempt: number; processes: AttemptProcess[] };
  /** The alternate agent model of the current escalation step, and attempts made on it. */
  agentModel?: string;
  alternatesUsed: number;
  attemptsInStep: number;
  /** Set when a replan took the sub-task out of the plan. */
  replacedBy?: string[];
  /** The sub-task's own definition, kept for those a replan removed from the ledger. */
  definition?: SubTask;
}

/** A run's state rebuilt from its log, as `Manager.resume` continues it. */
export interface RecoveredRun {
  request: string;
  cwd: string | undefined;
  ledger: TaskLedger | undefined;
  subTasks: Map<string, RecoveredSubTask>;
  managerUsage: Usage;
  agentUsage: Usage;
  /** Wall time the earlier sessions of the run took, for the time budget. */
  elapsedMs: number;
  budgetStop: BudgetExhaustion | undefined;
  nextSeq: number;
  /** The report, when the run had already finished. */
  finished: RunReport | undefined;
  /** The plan waited for the host's review when the log ends. */
  pendingPlanReview: boolean;
  /** Why the plan was rejected in review, if it was. */
  planRejected: string | undefined;
  replans: number;
}

/** Replays a run's records; the log is the only source of truth, so nothing else is consulted. */
export function recoverRun(records: readonly RunEvent[]): RecoveredRun {
  const run: RecoveredRun = {
    request: "",
    cwd: undefined,
    ledger: undefined,
    subTasks: new Map(),
    managerUsage: emptyUsage(),
    agentUsage: emptyUsage(),
    elapsedMs: 0,
    budgetStop: undefined,
    nextSeq: 0,
    finished: undefined,
    pendingPlanReview: false,
    planRejected: undefined,
    replans: 0,
  };
  let completed = 0;
  let sessionStart: number | undefined;
  let lastTime: number | undefined;
  const closeSession = () => {
    if (sessionStart !== undefined && lastTime !== undefined)
      run.elapsedMs += lastTime - sessionStart;
  };
  const subTask = (id: string): RecoveredSubTask => {
    let state = run.subTasks.get(id);
    if (!state) {
      state = {
        status: "pending",
        attempts: 0,
        reason: null,
        alternatesUsed: 0,
        attemptsInStep: 0,
      };
      run.subTasks.set(id, state);
    }
    return state;
  };

  for (const record of records) {
    run.nextSeq = Math.max(run.nextSeq, record.seq + 1);
    const time = Date.parse(record.time);
    switch (record.type) {
      case "run-started":
      case "run-resumed":
        closeSession();
        sessionStart = time;
        if (record.type === "run-started") {
          run.request = record.request;
          run.cwd = record.cwd;
        }
        break;
      case "plan-created":
        run.ledger = record.ledger;
        run.managerUsage = addUsage(run.managerUsage, record.usage);
        for (const s of record.ledger.subTasks) subTask(s.id);
        break;
      case "sub-task-started": {
        const state = subTask(record.subTaskId);
        state.attempts = Math.max(state.attempts, record.attempt);
        state.attemptsInStep++;
        state.status = "running";
        state.carried = undefined;
        state.interrupted = { attempt: record.attempt, processes: [] };
        break;
      }
      case "attempt-process":
        subTask(record.subTaskId).interrupted?.processes.push({
          pid: record.pid,
          startTime: record.startTime,
        });
        break;
      case "attempt-finished": {
        const state = subTask(record.subTaskId);
        run.agentUsage = addUsage(run.agentUsage, record.result.usage);
        // An attempt stopped by a cancel did not finish its work: it runs again, not judged.
        if (record.result.outcome === "cancelled") break;
        state.interrupted = undefined;
        state.carried = { attempt: record.attempt, result: record.result };
        break;
      }
      case "sub-task-evaluated": {
        const state = subTask(record.subTaskId);
        run.managerUsage = addUsage(run.managerUsage, record.entry.usage);
        state.entry = record.entry;
        if (state.carried) state.carried.entry = record.entry;
        break;
      }
      case "sub-task-retrying": {
        const state = subTask(record.subTaskId);
        if (state.carried?.entry)
          state.previous = { attempt: state.carried.attempt, entry: state.carried.entry };
        state.carried = undefined;
        break;
      }
      case "sub-task-completed":
      case "sub-task-failed":
      case "sub-task-skipped": {
        const state = subTask(record.subTaskId);
        state.status =
          record.type === "sub-task-completed"
            ? "completed"
            : record.type === "sub-task-failed"
              ? "failed"
              : "skipped";
        state.reason = "reason" in record ? record.reason : null;
        if (record.type === "sub-task-completed") {
          state.entry = record.entry;
          state.order = completed++;
        }
        state.carried = undefined;
        state.interrupted = undefined;
        break;
      }
      case "sub-task-escalated": {
        const state = subTask(record.subTaskId);
        if (record.step === "alternate-model") {
          state.alternatesUsed++;
          if (record.agentModel !== undefined) state.agentModel = record.agentModel;
          state.attemptsInStep = 0;
        }
        break;
      }
      case "plan-review-requested":
        if (record.kind === "plan") run.pendingPlanReview = true;
        break;
      case "plan-reviewed":
        if (record.kind === "plan") {
          run.pendingPlanReview = false;
          if (record.ledger) run.ledger = record.ledger;
          if (record.action === "reject") run.planRejected = record.reason ?? "rejected in review";
        }
        break;
      case "plan-revised": {
        const before = new Map((run.ledger?.subTasks ?? []).map((s) => [s.id, s]));
        for (const id of record.replaced) {
          const state = subTask(id);
          state.status = "replaced";
          state.reason = record.reason;
          state.replacedBy = record.added;
          state.definition = before.get(id);
          state.carried = undefined;
          state.interrupted = undefined;
        }
        run.ledger = record.ledger;
        run.managerUsage = addUsage(run.managerUsage, record.usage);
        run.replans++;
        for (const id of record.added) subTask(id);
        break;
      }
      case "budget-exhausted":
        run.budgetStop ??= { kind: record.kind, limit: record.limit, used: record.used };
        break;
      case "run-finished":
        // A cancelled run can be taken up again; any other report is final.
        run.finished = record.report.status === "cancelled" ? undefined : record.report;
        if (record.report.status === "cancelled") {
          for (const state of run.subTasks.values()) {
            if (state.status === "running" || state.status === "cancelled")
              state.status = "pending";
          }
        }
        break;
      default:
        break;
    }
    if (Number.isFinite(time)) lastTime = time;
  }
  closeSession();
  return run;
}
