import type { RunEvent, SubTaskStatus, Usage } from "@taskledger/core";
import { addUsage, emptyUsage, oneLine } from "@taskledger/core";

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

/** What a person watching a run needs to see, folded from its events. */
export interface ProgressState {
  planned: boolean;
  subTasks: SubTaskView[];
  byId: Map<string, SubTaskView>;
}

function newView(subTask: { id: string; title: string }, index: number): SubTaskView {
  return {
    id: subTask.id,
    title: subTask.title,
    index,
    status: "pending",
    attempt: 0,
    startedAt: undefined,
    lastDurationMs: undefined,
    activity: "",
    note: "",
    usage: emptyUsage(),
  };
}

export function createProgressState(): ProgressState {
  return { planned: false, subTasks: [], byId: new Map() };
}

/** Folds one event into the state; returns what changed, if anything worth a log line. */
export function applyEvent(state: ProgressState, event: RunEvent, now = Date.now()): void {
  switch (event.type) {
    case "plan-created":
      state.planned = true;
      state.subTasks = event.ledger.subTasks.map((subTask, i) => newView(subTask, i + 1));
      state.byId = new Map(state.subTasks.map((view) => [view.id, view]));
      return;
    case "plan-revised": {
      for (const id of event.replaced) {
        const view = state.byId.get(id);
        if (view) {
          view.status = "replaced";
          view.note = oneLine(event.reason, 100);
        }
      }
      for (const subTask of event.ledger.subTasks) {
        if (state.byId.has(subTask.id)) continue;
        const view = newView(subTask, state.subTasks.length + 1);
        state.subTasks.push(view);
        state.byId.set(view.id, view);
      }
      return;
    }
    case "sub-task-started": {
      const view = state.byId.get(event.subTaskId);
      if (!view) return;
      view.status = "running";
      view.attempt = event.attempt;
      view.startedAt = now;
      view.activity = "";
      return;
    }
    case "agent-event": {
      const view = state.byId.get(event.subTaskId);
      if (!view) return;
      const agent = event.event;
      if (agent.type === "tool-use") view.activity = oneLine(`${agent.tool} ${agent.input}`, 60);
      else if (agent.type === "text" && agent.text.trim()) view.activity = oneLine(agent.text, 60);
      return;
    }
    case "attempt-finished": {
      const view = state.byId.get(event.subTaskId);
      if (!view) return;
      view.lastDurationMs = event.result.durationMs;
      view.usage = addUsage(view.usage, event.result.usage);
      return;
    }
    case "sub-task-retrying": {
      const view = state.byId.get(event.subTaskId);
      if (view) view.note = oneLine(event.feedback || "incomplete", 100);
      return;
    }
    case "sub-task-completed":
    case "sub-task-failed":
    case "sub-task-skipped": {
      const view = state.byId.get(event.subTaskId);
      if (!view) return;
      view.status =
        event.type === "sub-task-completed"
          ? "completed"
          : event.type === "sub-task-failed"
            ? "failed"
            : "skipped";
      view.note =
        event.type === "sub-task-completed"
          ? oneLine(event.entry.summary, 100)
          : oneLine(event.reason, 100);
      view.startedAt = undefined;
      return;
    }
    case "run-finished":
      for (const report of event.report.subTasks) {
        const view = state.byId.get(report.id);
        if (view) view.status = report.status;
      }
      return;
    default:
      return;
  }
}
