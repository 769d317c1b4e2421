import { createRunState, RunNotFoundError, type RunState } from "@taskledger/core";
import type { LiveRun } from "../runs/live-runs.js";
import { reportResult, statusResult } from "./result-views.js";
import type { ToolContext } from "./tool-context.js";

/** A run of this server, as its live state tells it. */
export function liveStatus(live: LiveRun) {
  const state = live.run.snapshot() ?? live.before ?? blankState(live);
  return statusResult(state, !live.ended, live.reviews.pending, live.ended?.error);
}

function blankState(live: LiveRun): RunState {
  return { ...createRunState(live.runId), cwd: live.directory };
}

/** A run as its log in the store tells it; undefined when the store has no such run. */
export async function storedState(ctx: ToolContext, runId: string): Promise<RunState | undefined> {
  const log = await ctx.catalog.get(runId);
  return log && log.state.nextSeq > 0 ? log.state : undefined;
}

/** A run's status: live when this server runs it, else from its log (`stored`, when read). */
export async function statusOf(ctx: ToolContext, runId: string, stored?: RunState) {
  const live = ctx.runs.get(runId);
  if (live && !live.ended) return liveStatus(live);
  const state = stored ?? (await storedState(ctx, runId));
  if (!state) {
    if (live) return liveStatus(live);
    throw new RunNotFoundError(runId);
  }
  return statusResult(state, await ctx.catalog.isActive(runId), undefined, live?.ended?.error);
}

/** The report of a run that ended (a stopped one's too), or undefined. */
export async function finishedReport(ctx: ToolContext, runId: string) {
  const live = ctx.runs.get(runId);
  if (live?.ended?.report)
    return reportResult(live.ended.report, live.directory, live.run.snapshot()?.planRejected);
  const state = await storedState(ctx, runId);
  return state?.report ? reportResult(state.report, state.cwd, state.planRejected) : undefined;
}
