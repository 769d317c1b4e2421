import {
  addUsage,
  clipMiddle,
  oneLine,
  type RunReport,
  type RunState,
  type SubTask,
  type Usage,
} from "@taskledger/core";
import { type ReviewView, statusOf } from "@taskledger/ui";
import { limits, type RunReportResult, type RunStatusResult } from "./tool-schemas.js";

export function usageOf(usage: Usage): RunStatusResult["usage"] {
  return {
    inputTokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
    outputTokens: usage.outputTokens,
    costUsd: usage.costUsd === undefined || usage.unpricedModels ? undefined : usage.costUsd,
  };
}

export function plannedOf(subTasks: readonly SubTask[]) {
  return subTasks.slice(0, limits.subTasks).map((s) => ({
    id: s.id,
    title: oneLine(s.title, limits.short),
    description: clipMiddle(s.description, limits.description),
    successCriteria: s.successCriteria.slice(0, 20).map((c) => oneLine(c, limits.short)),
    dependsOn: [...s.dependsOn],
  }));
}

/** Where the run stands. `live`: this server runs it now; `review`: its pending question. */
export function statusResult(
  state: RunState,
  live: boolean,
  review: ReviewView | undefined,
  error?: string,
): RunStatusResult {
  // A resumed run carries the report its last session ended with until it ends again.
  const shown = statusOf(live ? { ...state, report: undefined } : state, live);
  const rejected = shown === "cancelled" ? state.planRejected : undefined;
  const status = rejected === undefined ? shown : "rejected";
  const current = [...state.subTasks.values()].filter((s) => s.status !== "replaced");
  const pending = status === "awaiting-review" ? review : undefined;
  return {
    runId: state.runId,
    status,
    request: oneLine(state.request, limits.request),
    directory: state.cwd,
    done: current.filter((s) => s.status === "completed").length,
    total: current.length,
    subTasks: current.slice(0, limits.subTasks).map((s) => ({
      id: s.subTask.id,
      title: oneLine(s.subTask.title, limits.short),
      status: s.status,
      attempts: s.attempts,
    })),
    running: current
      .filter((s) => s.status === "running")
      .map((s) => ({
        id: s.subTask.id,
        attempt: s.attempts,
        activity: oneLine(s.activity ?? "", limits.short),
      })),
    usage: usageOf(addUsage(state.usage.manager, state.usage.agents)),
    review: pending
      ? {
          reviewId: pending.id,
          kind: pending.kind,
          subTasks: plannedOf((pending.ledger as { subTasks: SubTask[] }).subTasks),
          replaced: pending.replaced,
          reason:
            pending.reason === undefined ? undefined : oneLine(pending.reason, limits.summary),
        }
      : undefined,
    reason: rejected === undefined ? undefined : oneLine(rejected, limits.summary),
    error: error ?? (state.failure ? oneLine(state.failure.message, limits.summary) : undefined),
    next: nextStep(status, state.runId, pending !== undefined),
  };
}

function nextStep(status: RunStatusResult["status"], runId: string, askable: boolean): string {
  switch (status) {
    case "planning":
    case "running":
      return `Call wait_for_run with runId "${runId}" to follow it.`;
    case "awaiting-review":
      return askable
        ? "Show the plan to the user, then call answer_plan_review with the reviewId."
        : `The plan waits for a review in another process; resume_run "${runId}" here to review it.`;
    case "rejected":
      return `Its plan was rejected in review; nothing ran. Call start_run with a changed request to try again.`;
    case "stopped":
    case "cancelled":
      return `Stopped; its log is kept. Call resume_run with runId "${runId}" to continue it.`;
    default:
      return `Call get_run_report with runId "${runId}" for what it did.`;
  }
}

/** `planRejected`: why the run's plan was rejected in review, when it was. */
export function reportResult(
  report: RunReport,
  directory: string | undefined,
  planRejected: string | undefined,
): RunReportResult {
  const workspace = report.workspace;
  return {
    runId: report.runId,
    status:
      report.status === "cancelled" && planRejected !== undefined ? "rejected" : report.status,
    reason: report.reason === null ? undefined : oneLine(report.reason, limits.summary),
    request: oneLine(report.request, limits.request),
    directory,
    subTasks: report.subTasks.slice(0, limits.subTasks).map((s) => ({
      id: s.id,
      title: oneLine(s.title, limits.short),
      status: s.status,
      attempts: s.attempts,
      summary: clipMiddle(s.summary, limits.summary),
      output: clipMiddle(s.outputData, limits.output),
      reason: s.reason === null ? undefined : oneLine(s.reason, limits.summary),
      filesChanged: (s.filesChanged ?? []).slice(0, limits.files),
    })),
    branch: workspace?.branch,
    // Shared runs changed the directory itself.
    applied: workspace ? workspace.applied || workspace.isolation === "shared" : true,
    note: workspace?.note === undefined ? undefined : clipMiddle(workspace.note, limits.summary),
    ...gateOf(report),
    usage: usageOf(report.usage.total),
    durationMs: report.durationMs,
  };
}

/** What the integration gate and the acceptance found, said briefly. */
function gateOf(report: RunReport): Pick<RunReportResult, "integration" | "acceptance"> {
  const { integration, acceptance } = report;
  const command = (argv: readonly string[]) => oneLine(argv.join(" "), limits.short);
  const final = integration?.final;
  return {
    ...(integration && integration.runs > 0
      ? {
          integration: {
            runs: integration.runs,
            sentBack: integration.failures.map((f) => ({
              subTaskId: f.subTaskId,
              attempt: f.attempt,
              failed: f.checks.map((c) => command(c.argv)),
            })),
            ...(final && !final.passed
              ? { finalFailed: final.checks.filter((c) => !c.passed).map((c) => command(c.argv)) }
              : {}),
          },
        }
      : {}),
    ...(acceptance
      ? {
          acceptance: {
            verdict: acceptance.verdict,
            missing: acceptance.missing.map((m) => oneLine(m.what, limits.short)),
          },
        }
      : {}),
  };
}
