import {
  addUsage,
  elapsedMs,
  oneLine,
  type RunState,
  type SubTaskState,
  type Usage,
} from "@taskledger/core";
import type { RunLog } from "./run-log.js";
import { clip, textLimits } from "./text-limits.js";
import type {
  NodeView,
  ReviewView,
  RunStatusView,
  RunSummaryView,
  RunView,
  SubTaskDetailView,
  TimelineRowView,
  TimelineView,
  TokensView,
} from "./view.js";

export function tokensOf(usage: Usage): TokensView {
  return {
    input: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
    output: usage.outputTokens,
    ...(usage.costUsd === undefined ? {} : { costUsd: usage.costUsd }),
  };
}

/**
 * `active`: a process holds the run now (its lock, or this very process). `resumed`: a session
 * began after the last report (a cancelled run taken up again), so that report is history.
 */
export function statusOf(state: RunState, active: boolean, resumed = false): RunStatusView {
  if (state.report && !resumed) return state.report.status;
  if (state.failure) return "failed";
  if (!active) return "stopped";
  if (state.planReviewPending || state.replanReview) return "awaiting-review";
  return state.planned ? "running" : "planning";
}

export function summaryOf(log: RunLog, active: boolean): RunSummaryView {
  const { state } = log;
  const current = [...state.subTasks.values()].filter((s) => s.status !== "replaced");
  return {
    runId: state.runId,
    request: oneLine(state.request, 200),
    status: statusOf(state, active, log.resumedAfterReport),
    startedAt: firstStart(log),
    durationMs: elapsedMs(state),
    done: current.filter((s) => s.status === "completed").length,
    total: current.length,
    tokens: tokensOf(addUsage(state.usage.manager, state.usage.agents)),
    ...(log.error ? { error: log.error } : {}),
  };
}

function firstStart(log: RunLog): string | undefined {
  const first = log.state.sessionStartedAt ?? log.state.lastRecordAt;
  return log.startedAt ?? (first === undefined ? undefined : new Date(first).toISOString());
}

export function nodeOf(s: SubTaskState): NodeView {
  return {
    id: s.subTask.id,
    title: clip(s.subTask.title, textLimits.short),
    status: s.status,
    dependsOn: [...s.subTask.dependsOn],
    attempts: s.attempts,
    tokens: tokensOf(s.usage),
    activity: activityOf(s),
  };
}

/** The live activity a running sub-task's agent was last seen at ("" when none is known). */
function activityOf(s: SubTaskState): string {
  return s.status === "running" ? clip(s.activity, textLimits.short) : "";
}

/** The run's sub-tasks as rows of attempts on one time axis, from its start to now (or its end). */
export function timelineOf(log: RunLog, active: boolean, now = Date.now()): TimelineView {
  const { state } = log;
  const time = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));
  const start = time(summaryOf(log, active).startedAt);
  const end = active ? now : (state.lastRecordAt ?? now);
  const rows: TimelineRowView[] = [...state.subTasks.values()].map((s) => {
    const id = s.subTask.id;
    const ready = s.subTask.dependsOn.map((dep) => time(log.completedAt.get(dep)));
    return {
      id,
      title: clip(s.subTask.title, textLimits.short),
      status: s.status,
      dependsOn: [...s.subTask.dependsOn],
      readyAt: ready.length && ready.every(Number.isFinite) ? Math.max(...ready) : undefined,
      attempts: (log.attempts.get(id) ?? []).map((a) => ({
        attempt: a.attempt,
        start: time(a.startedAt),
        end: a.finishedAt === undefined ? undefined : time(a.finishedAt),
        outcome: a.outcome,
        completed: a.verdict?.completed,
        agentModel: a.agentModel,
        waitedForWorkerMs: a.waitedForWorkerMs,
      })),
    };
  });
  return {
    start: Number.isFinite(start) ? start : end,
    end,
    rows,
    ...(log.gateRuns.length > 0 ? { gate: log.gateRuns } : {}),
    ...(log.acceptance.length > 0 ? { acceptance: log.acceptance } : {}),
    ...(log.providerWaits.length > 0 ? { waits: log.providerWaits } : {}),
  };
}

export function runViewOf(
  log: RunLog,
  active: boolean,
  live: boolean,
  review: ReviewView | undefined,
): RunView {
  const { state } = log;
  const host = state.settings?.host as Record<string, unknown> | undefined;
  // Only these two names reach the page: the host settings hold no key, and nothing else is shown.
  const name = (value: unknown) =>
    typeof value === "string" ? clip(value, textLimits.short) : undefined;
  return {
    summary: summaryOf(log, active),
    request: clip(state.request, textLimits.request),
    models: {
      manager:
        host && typeof host.provider === "string"
          ? `${name(host.provider)}/${name(host.model)}`
          : undefined,
      agent: name(host?.agentModel),
    },
    nodes: [...state.subTasks.values()].map(nodeOf),
    facts: state.facts.map((f) => ({ kind: f.kind, text: clip(f.text) })),
    live,
    review,
    failure: state.failure ? clip(`${state.failure.message} [${state.failure.code}]`) : undefined,
  };
}

export function detailOf(log: RunLog, id: string): SubTaskDetailView | undefined {
  const s = log.state.subTasks.get(id);
  if (!s) return undefined;
  const { subTask } = s;
  return {
    id: subTask.id,
    title: clip(subTask.title, textLimits.short),
    status: s.status,
    reason: s.reason === null ? null : clip(s.reason),
    description: clip(subTask.description),
    successCriteria: subTask.successCriteria.map((c) => clip(c)),
    checks: subTask.checks.map((check) =>
      clip(
        check.type === "command"
          ? `command: ${check.argv.join(" ")}`
          : check.type === "file-exists"
            ? `file exists: ${check.path}`
            : `file ${check.path} matches /${check.pattern}/`,
        textLimits.short * 5,
      ),
    ),
    dependsOn: [...subTask.dependsOn],
    attempts: log.attempts.get(id) ?? [],
    tokens: tokensOf(s.usage),
    outputData: s.status === "completed" ? clip(s.entry?.outputData, textLimits.text * 2) : "",
    replacedBy: s.replacedBy,
    activity: activityOf(s),
    candidates: s.rounds.map((r) => ({
      round: r.round,
      reason: r.reason,
      winner: r.winner ?? null,
      by: r.by,
      why: clip(r.why),
      candidates: r.candidates.map((c) => ({
        attempt: c.attempt,
        agentModel: c.agentModel,
        ref: c.ref,
        completed: c.completed,
        lost: c.lost === undefined ? undefined : clip(c.lost),
        tokens: tokensOf(c.usage),
      })),
    })),
  };
}
