import {
  applyRunEvent,
  createRunState,
  oneLine,
  type RunEvent,
  type RunState,
  type SubTaskState,
  type SubTaskStatus,
  type Usage,
} from "@taskledger/core";
import { createShownLimits, noteLimit, type ShownLimits } from "./provider-limit-lines.js";
import { terminalText } from "./terminal-text.js";

/** A sub-task as shown; its text fields are safe to print (`terminalText`). */
export interface SubTaskView {
  id: string;
  title: string;
  /** 1-based position in the plan, for "Step 2/3". */
  index: number;
  status: SubTaskStatus;
  attempt: number;
  /** When the current attempt started (ms since epoch). */
  startedAt: number | undefined;
  /** Duration of the last finished attempt (ms). */
  lastDurationMs: number | undefined;
  /** Last agent activity: the tool it used or the text it wrote, one line. */
  activity: string;
  note: string;
  usage: Usage;
}

/**
 * What a person watching a run needs to see. The run's state is core's own fold of its events
 * (`applyRunEvent`), the one the manager runs on and recovers with; views are read from it.
 */
export interface ProgressState {
  run: RunState;
  planned: boolean;
  subTasks: SubTaskView[];
  byId: Map<string, SubTaskView>;
  /** The provider pauses already shown, so lanes limited in one pause print one line. */
  limits: ShownLimits;
}

export function createProgressState(): ProgressState {
  return {
    run: createRunState(""),
    planned: false,
    subTasks: [],
    byId: new Map(),
    limits: createShownLimits(),
  };
}

/** Folds one event into the state and refreshes the views it touched. */
export function applyEvent(state: ProgressState, event: RunEvent, now = Date.now()): void {
  applyRunEvent(state.run, event);
  if (event.type === "provider-limited") noteLimit(state.limits, event);
  if (event.type === "sub-task-started") state.limits.waiting.delete(event.subTaskId);
  state.planned = state.run.planned;
  if (event.type === "run-finished") {
    // The report's statuses are the final word (a cancelled run's state is ready to resume).
    for (const report of event.report.subTasks) {
      const view = state.byId.get(report.id);
      if (view) view.status = report.status;
    }
    return;
  }
  if (state.run.subTasks.size !== state.subTasks.length || event.type.startsWith("plan-")) {
    state.subTasks = [...state.run.subTasks.values()].map((s, i) =>
      toView(s, i + 1, state.byId.get(s.subTask.id), now),
    );
    state.byId = new Map(state.subTasks.map((view) => [view.id, view]));
    return;
  }
  const id = "subTaskId" in event ? event.subTaskId : undefined;
  const s = id === undefined ? undefined : state.run.subTasks.get(id);
  const view = id === undefined ? undefined : state.byId.get(id);
  if (s && view) Object.assign(view, toView(s, view.index, view, now));
}

function toView(
  s: SubTaskState,
  index: number,
  before: SubTaskView | undefined,
  now: number,
): SubTaskView {
  const running = s.status === "running";
  return {
    id: s.subTask.id,
    title: terminalText(s.subTask.title),
    index,
    status: s.status,
    attempt: s.attempts,
    // The live clock when it is shown live; a replayed attempt keeps the time it started.
    startedAt: running
      ? before?.attempt === s.attempts && before.startedAt !== undefined
        ? before.startedAt
        : startTime(s, now)
      : undefined,
    lastDurationMs: s.lastDurationMs,
    activity: terminalText(s.activity),
    note: noteOf(s),
    usage: s.usage,
  };
}

function startTime(s: SubTaskState, now: number): number {
  const recorded = s.startedAt === undefined ? Number.NaN : Date.parse(s.startedAt);
  return Number.isFinite(recorded) ? Math.min(recorded, now) : now;
}

function noteOf(s: SubTaskState): string {
  if (s.status === "completed") return oneLine(terminalText(s.entry?.summary ?? ""), 100);
  if (s.reason !== null && s.status !== "pending" && s.status !== "running")
    return oneLine(terminalText(s.reason), 100);
  return s.lastFeedback === undefined
    ? ""
    : oneLine(terminalText(s.lastFeedback || "incomplete"), 100);
}
