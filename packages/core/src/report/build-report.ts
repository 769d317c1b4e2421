import type { CandidateChoice, RunState, SubTaskState } from "../log/run-state.js";
import { addUsage } from "../usage/usage.js";
import {
  type CandidateRoundReport,
  type RunReport,
  type RunStatus,
  runReportVersion,
  type SubTaskReport,
} from "./run-report.js";

export interface ReportContext {
  cancelled: boolean;
  /** Why the run stopped short, when it did (see `StopConditions.reason`). */
  stopReason: string | undefined;
  startedAt: Date;
  finishedAt: Date;
}

/** The run's report, read from its state. */
export function buildReport(state: RunState, context: ReportContext): RunReport {
  const subTasks: SubTaskReport[] = [...state.subTasks.values()].map((s) => ({
    id: s.subTask.id,
    title: s.subTask.title,
    status: s.status,
    // Attempts a provider's limit ended were no try of the agent's: counted apart.
    attempts: s.attempts - s.limited,
    ...(s.limited > 0 ? { rateLimited: s.limited } : {}),
    summary: s.entry?.summary ?? "",
    outputData: s.status === "completed" ? (s.entry?.outputData ?? "") : "",
    reason: s.status === "completed" ? null : s.reason,
    ...(s.status === "failed" && s.failure ? { failure: s.failure } : {}),
    replacedBy: s.replacedBy,
    ...(s.merged && s.status === "completed"
      ? { commit: s.merged.commit, filesChanged: s.merged.filesChanged }
      : {}),
    usage: subTaskUsage(s),
    ...(s.rounds.length > 0 ? { candidates: s.rounds.map(roundReport) } : {}),
    ...(s.refusals.length > 0 ? { refusals: s.refusals.map((r) => ({ ...r })) } : {}),
    ...(s.outsideCwd.length > 0 ? { outsideCwd: s.outsideCwd } : {}),
  }));
  const rounds = subTasks.flatMap((s) => s.candidates ?? []);
  // A replaced sub-task's goal lives on in its replacements; only those count.
  const live = subTasks.filter((s) => s.status !== "replaced");
  const completed = live.filter((s) => s.status === "completed").length;
  let status: RunStatus;
  if (context.cancelled || state.planRejected !== undefined) status = "cancelled";
  else if (completed === live.length && completed > 0) status = "completed";
  else if (completed > 0) status = "partial";
  // A provider that refused for good stopped the run short: nothing of it failed on its own.
  else if (state.providerStop !== undefined && !context.cancelled) status = "partial";
  else status = "failed";
  const notDone = live.filter((s) => s.status !== "completed");
  let reason: string | null = null;
  const integration = integrationReport(state);
  const acceptance = acceptanceReport(state);
  // Every part done is not the whole done: a broken final tip or an unmet request is partial.
  const whole = status === "completed" ? wholeShortfall(integration, acceptance) : undefined;
  if (whole) {
    status = "partial";
    reason = context.stopReason !== undefined ? `Stopped: ${context.stopReason}. ${whole}` : whole;
  } else if (status !== "completed") {
    reason =
      context.stopReason !== undefined
        ? `Stopped: ${context.stopReason}.`
        : `${notDone.length} of ${live.length} sub-task(s) did not complete: ${notDone
            .map((s) => `${s.id} (${s.status})`)
            .join(", ")}.`;
  }
  const { manager, agents } = state.usage;
  const workspace = workspaceReport(state, context.cancelled);
  return {
    version: runReportVersion,
    runId: state.runId,
    request: state.request,
    status,
    reason,
    subTasks,
    ...(state.facts.length > 0 ? { facts: state.facts } : {}),
    ...(state.explore?.finished
      ? { explore: { ...state.explore.finished, attempts: state.explore.attempts } }
      : {}),
    ...(state.project
      ? { project: { files: state.project.files, commands: state.project.commands } }
      : {}),
    ...(rounds.length > 0
      ? {
          candidates: {
            rounds: rounds.length,
            extraUsage: addUsage(...rounds.map((r) => r.extraUsage)),
          },
        }
      : {}),
    usage: { manager, agents, total: addUsage(manager, agents) },
    ...(integration ? { integration } : {}),
    ...(acceptance ? { acceptance } : {}),
    ...(state.providers.size > 0 ? { providers: providersReport(state) } : {}),
    ...(workspace ? { workspace } : {}),
    startedAt: context.startedAt.toISOString(),
    finishedAt: context.finishedAt.toISOString(),
    durationMs: context.finishedAt.getTime() - context.startedAt.getTime(),
  };
}

/** What the integration gate ran and found; absent when it was off or never ran. */
function integrationReport(state: RunState): RunReport["integration"] {
  const mode = state.settings?.integration ?? "off";
  const { runs, failures, final, verdicts } = state.integration;
  // The tip's last verdict, whatever checks it was given.
  const tipVerdict = state.tipTree
    ? [...verdicts].filter(([key]) => key.startsWith(`${state.tipTree}\n`)).at(-1)?.[1]
    : undefined;
  const last = final ?? tipVerdict;
  if (mode === "off" && runs === 0) return undefined;
  return {
    mode,
    runs,
    failures: failures.map((f) => ({
      subTaskId: f.subTaskId,
      attempt: f.attempt,
      with: f.with,
      checks: f.results.map((r) => ({ argv: r.argv, detail: r.detail })),
    })),
    ...(last
      ? { final: { passed: last.passed, checks: last.results.map((r) => ({ ...r })) } }
      : {}),
  };
}

/** The request judged as a whole: the last verdict and what it found missing. */
function acceptanceReport(state: RunState): RunReport["acceptance"] {
  const last = state.acceptance.at(-1);
  if (!last) return undefined;
  return {
    verdict: last.verdict,
    rounds: state.acceptance.length,
    missing: last.missing.map((m) => ({ ...m })),
    ...(last.reason ? { reason: last.reason } : {}),
    continued: state.acceptance.flatMap((a) => a.continued ?? []),
    usage: addUsage(...state.acceptance.map((a) => a.usage)),
  };
}

/** Why the whole falls short though every sub-task completed, if it does. */
function wholeShortfall(
  integration: RunReport["integration"],
  acceptance: RunReport["acceptance"],
): string | undefined {
  if (integration?.final && !integration.final.passed) {
    const failing = integration.final.checks.filter((c) => !c.passed).map((c) => c.argv.join(" "));
    return `Every sub-task completed, but the combined result fails ${failing.join(", ")}: not applied.`;
  }
  if (acceptance?.verdict === "unsatisfied") {
    return `Every sub-task completed, but the request is not met as a whole: missing ${acceptance.missing
      .map((m) => m.what)
      .join("; ")}.`;
  }
  return undefined;
}

function workspaceReport(state: RunState, cancelled: boolean): RunReport["workspace"] {
  const record = state.workspace;
  if (!record) return undefined;
  if (record.kind === "shared") {
    return {
      isolation: "shared",
      applied: false,
      ...(record.notice ? { note: record.notice } : {}),
    };
  }
  const outcome = state.workspaceOutcome;
  const slots = state.slots.length > 0 ? { slots: state.slots.map((slot) => ({ ...slot })) } : {};
  // The branch is made only when the run ends with work on it: never name one that is not there.
  if (outcome === undefined || outcome.commit === record.base) {
    return {
      isolation: "worktree",
      applied: false,
      note: noBranchNote(state, record, cancelled),
      ...slots,
    };
  }
  return {
    isolation: "worktree",
    branch: outcome.branch,
    commit: outcome.commit,
    applied: outcome.applied,
    note: outcome.note,
    ...slots,
  };
}

function noBranchNote(state: RunState, record: { branch: string }, cancelled: boolean): string {
  if (state.planRejected !== undefined) return "No branch made: the plan was rejected in review.";
  if (cancelled) {
    return `No branch made: the run was cancelled. Resume it to go on; ${record.branch} is made when it ends.`;
  }
  return state.workspaceOutcome?.note ?? "No branch made: no sub-task completed.";
}

function roundReport(choice: CandidateChoice): CandidateRoundReport {
  const losers = choice.candidates.filter((c) => c.attempt !== choice.winner);
  return {
    round: choice.round,
    reason: choice.reason,
    winner: choice.winner ?? null,
    by: choice.by,
    why: choice.why,
    candidates: choice.candidates.map((c) => ({ ...c })),
    judgeUsage: choice.usage,
    extraUsage: addUsage(choice.usage, ...losers.map((c) => c.usage)),
  };
}

function subTaskUsage(s: SubTaskState): NonNullable<SubTaskReport["usage"]> {
  const attempts = [...s.attemptUsage].sort((a, b) => a.attempt - b.attempt);
  const evaluation = addUsage(...attempts.map((a) => a.evaluation));
  return {
    agents: s.usage,
    evaluation,
    total: addUsage(s.usage, evaluation),
    attempts: attempts.map((a) => ({ ...a })),
  };
}

/** Each provider that refused work: its pauses, the time they took and what it refused. */
function providersReport(state: RunState): NonNullable<RunReport["providers"]> {
  return [...state.providers].map(([key, waits]) => ({
    key,
    provider: waits.provider,
    waits: waits.waits,
    waitedMs: waits.waitedMs,
    rejected: waits.rejected,
    ...(waits.exhausted === undefined ? {} : { exhausted: waits.exhausted }),
  }));
}
