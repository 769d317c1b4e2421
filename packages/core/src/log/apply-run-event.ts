import { incompleteReasonOf, type ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTask } from "../ledger/sub-task.js";
import type { TaskLedger } from "../ledger/task-ledger.js";
import { oneLine } from "../text/text-clip.js";
import { addUsage, emptyUsage } from "../usage/usage.js";
import { addStreamed, attemptUsageOf, countInterrupted } from "./attempt-usage.js";
import type { RunEvent, RunEventOf } from "./run-events.js";
import {
  type AttemptUsage,
  candidateOf,
  maxKeptRefusals,
  maxSlotPreparations,
  type RunState,
  type SubTaskState,
  verdictKey,
} from "./run-state.js";

// Gate failures kept for the report: the latest, never a growing list.
const maxKeptGateFailures = 20;

/**
 * Applies one record to a run's state (in place) and returns it. The live run calls it for every
 * event it records and recovery folds the log with it, so the two cannot drift: a new record type
 * is one edit here.
 */
export function applyRunEvent(state: RunState, event: RunEvent): RunState {
  state.nextSeq = Math.max(state.nextSeq, event.seq + 1);
  const time = Date.parse(event.time);
  switch (event.type) {
    case "run-started":
    case "run-resumed":
      closeSession(state);
      state.sessionStartedAt = Number.isFinite(time) ? time : undefined;
      if (event.type === "run-started") {
        state.request = event.request;
        state.cwd = event.cwd;
        state.settings = event.settings;
        state.hostPlan = event.plan;
        state.workspace = event.workspace;
        if (event.workspace?.kind === "worktree") state.tip = event.workspace.base;
      } else {
        // What a crash left running is pending until the resumed loop takes it up again.
        for (const s of state.subTasks.values()) if (s.status === "running") s.status = "pending";
        // An attempt the crash or cancel cut short was no try at the work: it costs no retry.
        for (const { subTaskId, attempt } of event.interrupted) {
          const s = subTask(state, subTaskId);
          // A candidate cut short is run again within its round, which is one step whatever.
          if (s && !candidateOf(s, attempt) && s.stepAttempts > 0) s.stepAttempts--;
        }
      }
      break;
    case "project-digested":
      state.project = event.digest;
      break;
    case "project-baseline":
      state.baseline = event.results;
      break;
    case "explore-started":
      state.explore = { attempts: event.attempt };
      break;
    case "explore-finished":
      state.explore = {
        attempts: event.attempt,
        finished: {
          outcome: event.outcome,
          findings: event.findings,
          refused: event.refused,
          wrote: event.wrote,
        },
      };
      state.usage.agents = addUsage(state.usage.agents, event.usage);
      break;
    case "plan-created":
      state.usage.manager = addUsage(state.usage.manager, event.usage);
      setPlan(state, event.ledger);
      break;
    case "plan-review-requested":
      if (event.kind === "plan") state.planReviewPending = true;
      else state.replanReview = { ledger: event.ledger, replaced: event.replaced ?? [] };
      break;
    case "plan-reviewed":
      if (event.kind === "replan") state.replanReview = undefined;
      if (event.kind !== "plan") break;
      state.planReviewPending = false;
      if (event.action === "reject") state.planRejected = event.reason ?? "rejected in review";
      else if (event.ledger) setPlan(state, event.ledger);
      break;
    case "candidates-started": {
      const s = subTask(state, event.subTaskId);
      if (s) startRound(s, event);
      break;
    }
    case "candidates-chosen": {
      state.usage.manager = addUsage(state.usage.manager, event.usage);
      const s = subTask(state, event.subTaskId);
      if (s) chooseInRound(s, event);
      break;
    }
    case "candidate-gave-way": {
      const s = subTask(state, event.subTaskId);
      if (s) giveWay(s, event);
      break;
    }
    case "sub-task-started": {
      const s = subTask(state, event.subTaskId);
      if (!s) break;
      if (event.candidate) {
        startCandidate(state, s, event);
        break;
      }
      // An attempt a stopped process left running is over: what its session spent counts.
      if (s.inFlight && s.inFlight.attempt !== event.attempt)
        countInterrupted(state, s, s.inFlight.attempt);
      s.status = "running";
      s.attempts = Math.max(s.attempts, event.attempt);
      s.stepAttempts++;
      s.finished = undefined;
      s.inFlight = {
        attempt: event.attempt,
        processes: [],
        ...(event.from ? { from: event.from } : {}),
      };
      s.startedAt = event.time;
      s.activity = "";
      break;
    }
    case "attempt-process": {
      const s = subTask(state, event.subTaskId);
      const flight = s && (candidateOf(s, event.attempt)?.inFlight ?? s.inFlight);
      flight?.processes.push({
        pid: event.pid,
        startTime: event.startTime,
        ...(event.marker === undefined ? {} : { marker: event.marker }),
      });
      break;
    }
    case "agent-event": {
      const s = subTask(state, event.subTaskId);
      const agent = event.event;
      if (s && (agent.type === "tool-use" || agent.type === "tool-started"))
        s.activity = oneLine(`${agent.tool} ${agent.input}`, 60);
      else if (s && agent.type === "text" && agent.text.trim())
        s.activity = oneLine(agent.text, 60);
      else if (s && agent.type === "executor-status")
        s.activity = agent.status === "waiting-for-worker" ? "waiting for a worker" : "";
      break;
    }
    case "attempt-step": {
      const s = subTask(state, event.subTaskId);
      if (s) addStreamed(s, event.attempt, event.usage);
      break;
    }
    case "attempt-finished": {
      state.usage.agents = addUsage(state.usage.agents, event.result.usage);
      const s = subTask(state, event.subTaskId);
      if (!s) break;
      // The result's usage is the whole session's: its steps' are not counted again.
      s.streamed = s.streamed?.filter((x) => x.attempt !== event.attempt);
      finishAttempt(s, event, attemptUsageOf(s, event.attempt));
      break;
    }
    case "provider-limited": {
      providerLimited(state, event);
      break;
    }
    case "sub-task-evaluated": {
      const entry = upgradeEntry(event.entry);
      state.usage.manager = addUsage(state.usage.manager, entry.usage);
      const s = subTask(state, event.subTaskId);
      if (!s) break;
      attemptUsageOf(s, event.attempt).evaluation = addUsage(entry.usage);
      const member = candidateOf(s, event.attempt);
      if (member) {
        member.entry = entry;
        if (event.commit) member.commit = event.commit;
        break;
      }
      s.entry = entry;
      if (s.finished?.attempt === event.attempt) s.finished.entry = entry;
      if (event.commit) s.workFrom = event.commit;
      break;
    }
    case "integration-checked": {
      const { integration } = state;
      integration.runs++;
      const verdict = { passed: event.passed, results: event.results };
      if (event.tree) integration.verdicts.set(verdictKey(event.tree, event.results), verdict);
      integration.last = { parts: event.parts, ...verdict };
      if (event.final)
        integration.final = { ...verdict, ...(event.commit ? { commit: event.commit } : {}) };
      break;
    }
    case "acceptance-judged":
      state.acceptance.push({
        round: event.round,
        verdict: event.verdict,
        missing: event.missing,
        ...(event.reason ? { reason: event.reason } : {}),
        usage: event.usage,
        completedAt: state.completionOrder.size,
      });
      state.usage.manager = addUsage(state.usage.manager, event.usage);
      break;
    case "sub-task-integration-failed":
      state.integration.failures.push({
        subTaskId: event.subTaskId,
        attempt: event.attempt,
        with: event.with,
        results: state.integration.last?.results.filter((r) => !r.passed) ?? [],
      });
      if (state.integration.failures.length > maxKeptGateFailures)
        state.integration.failures.shift();
      sendBack(state, event);
      break;
    case "sub-task-conflicted":
      sendBack(state, event);
      break;
    case "sub-task-retrying": {
      const s = subTask(state, event.subTaskId);
      if (!s) break;
      if (s.finished?.entry) s.previous = { attempt: s.finished.attempt, entry: s.finished.entry };
      s.finished = undefined;
      s.lastFeedback = event.feedback;
      break;
    }
    case "sub-task-escalated": {
      const s = subTask(state, event.subTaskId);
      if (s && event.step === "alternate-model") {
        s.alternatesUsed++;
        s.agentModel = event.agentModel;
        s.stepAttempts = 0;
        s.onCandidatesRung = false;
        // Another model starts afresh from the run's tip, not from the work that did not finish.
        s.workFrom = undefined;
      }
      break;
    }
    case "sub-task-completed": {
      const s = subTask(state, event.subTaskId);
      if (!s) break;
      settle(s, "completed", null);
      s.entry = upgradeEntry(event.entry);
      s.attempts = Math.max(s.attempts, event.attempts);
      if (event.workspace) {
        s.merged = event.workspace;
        state.tip = event.workspace.merge;
        state.tipTree = event.workspace.tree;
      }
      state.completionOrder.set(s.subTask.id, state.completionOrder.size);
      for (const id of state.dependents.get(s.subTask.id) ?? []) {
        const dependent = state.subTasks.get(id);
        if (dependent) dependent.waitingOn--;
      }
      break;
    }
    case "sub-task-failed":
    case "sub-task-skipped":
    case "sub-task-cancelled": {
      const s = subTask(state, event.subTaskId);
      const status =
        event.type === "sub-task-failed"
          ? "failed"
          : event.type === "sub-task-skipped"
            ? "skipped"
            : "cancelled";
      // Given up on: an attempt a stopped process left running will not run again.
      if (s && status !== "cancelled") {
        if (s.inFlight) countInterrupted(state, s, s.inFlight.attempt);
        for (const m of s.round?.chosen ? [] : (s.round?.members ?? []))
          if (m.inFlight) countInterrupted(state, s, m.attempt);
      }
      if (s) settle(s, status, event.reason);
      if (s && event.type === "sub-task-failed" && event.code) s.failure = event.code;
      if (event.type === "sub-task-failed" && event.usage)
        state.usage.manager = addUsage(state.usage.manager, event.usage);
      // A cancelled attempt stays in flight: a resumed run runs it again. One whose replan waits
      // for review is decided again on resume, so the same replan is asked about.
      const reviewing = state.replanReview?.replaced[0] === event.subTaskId;
      if (s && status === "cancelled" && !reviewing) s.finished = undefined;
      break;
    }
    case "plan-revised": {
      revisePlan(state, event.ledger, event.replaced, event.added, event.reason);
      const round = state.acceptance.find((a) => a.round === event.acceptance);
      if (round) round.continued = event.added;
      if (event.ledger.facts) state.facts = event.ledger.facts;
      state.usage.manager = addUsage(state.usage.manager, event.usage);
      // Missing work the acceptance found is new work, not a failure's replacement.
      if (event.acceptance === undefined) state.replans++;
      break;
    }
    case "budget-exhausted":
      state.budgetStop ??= { kind: event.kind, limit: event.limit, used: event.used };
      break;
    case "slot-prepared":
      if (state.slots.length < maxSlotPreparations) state.slots.push(event.preparation);
      break;
    case "workspace-finished": {
      const { type: _type, runId: _runId, seq: _seq, time: _time, v: _v, ...outcome } = event;
      state.workspaceOutcome = outcome;
      state.tip = event.commit;
      break;
    }
    case "run-finished":
      state.report = event.report;
      // A cancelled run can be taken up again: what it stopped is pending once more.
      if (event.report.status === "cancelled") {
        for (const s of state.subTasks.values()) {
          if (s.status === "running" || s.status === "cancelled") s.status = "pending";
        }
      }
      break;
    case "run-failed":
      state.failure = event.error;
      break;
    default:
      break;
  }
  if (Number.isFinite(time) && event.type !== "agent-event") state.lastRecordAt = time;
  return state;
}

function closeSession(state: RunState): void {
  if (state.sessionStartedAt !== undefined && state.lastRecordAt !== undefined)
    state.elapsedMs += state.lastRecordAt - state.sessionStartedAt;
  state.sessionStartedAt = undefined;
}

function subTask(state: RunState, id: string): SubTaskState | undefined {
  return state.subTasks.get(id);
}

function settle(s: SubTaskState, status: SubTaskState["status"], reason: string | null): void {
  s.status = status;
  s.reason = reason;
  s.finished = status === "completed" ? undefined : s.finished;
  if (status !== "cancelled") s.inFlight = undefined;
  s.startedAt = undefined;
}

/** Entries from logs written before `incomplete` existed get it once, here. */
function upgradeEntry(entry: ProgressEntry): ProgressEntry {
  if (entry.completed || entry.incomplete) return entry;
  const reason = incompleteReasonOf(entry);
  return reason ? { ...entry, incomplete: reason } : entry;
}

/** The plan to run (a new one, or one edited in review before anything ran): its sub-tasks afresh. */
function setPlan(state: RunState, ledger: TaskLedger): void {
  state.planned = true;
  state.facts = ledger.facts ?? [];
  state.subTasks.clear();
  state.dependents.clear();
  state.completionOrder.clear();
  for (const s of ledger.subTasks) addSubTask(state, s, 0);
}

/** Completed work that did not land (a conflict, a broken gate): incomplete after all. */
function sendBack(
  state: RunState,
  event: RunEventOf<"sub-task-conflicted"> | RunEventOf<"sub-task-integration-failed">,
): void {
  const s = subTask(state, event.subTaskId);
  if (!s) return;
  // The next attempt starts from the run's tip, where the work it met now is; after a broken gate,
  // from the merged result itself, its own work and the others' both in place.
  s.workFrom = "from" in event ? event.from : undefined;
  s.entry = event.entry;
  if (s.finished?.attempt === event.attempt) s.finished.entry = event.entry;
}

function addSubTask(state: RunState, subTask: SubTask, replans: number): void {
  const dependsOn = new Set(subTask.dependsOn);
  state.subTasks.set(subTask.id, {
    subTask,
    status: "pending",
    attempts: 0,
    entry: undefined,
    reason: null,
    waitingOn: [...dependsOn].filter((id) => !state.completionOrder.has(id)).length,
    stepAttempts: 0,
    limited: 0,
    agentModel: undefined,
    alternatesUsed: 0,
    replans,
    replacedBy: null,
    previous: undefined,
    lastFeedback: undefined,
    finished: undefined,
    inFlight: undefined,
    startedAt: undefined,
    lastDurationMs: undefined,
    usage: emptyUsage(),
    attemptUsage: [],
    refusals: [],
    activity: "",
    workFrom: undefined,
    merged: undefined,
    round: undefined,
    rounds: [],
    onCandidatesRung: false,
    outsideCwd: [],
  });
  for (const id of dependsOn) {
    const list = state.dependents.get(id);
    if (list) list.push(subTask.id);
    else state.dependents.set(id, [subTask.id]);
  }
}

/** Takes the replaced sub-tasks out of the plan and puts the new ones in; completed work stays. */
function revisePlan(
  state: RunState,
  ledger: TaskLedger,
  replaced: readonly string[],
  added: readonly string[],
  reason: string,
): void {
  const lineage = (replaced[0] ? state.subTasks.get(replaced[0])?.replans : undefined) ?? 0;
  for (const id of replaced) {
    const s = state.subTasks.get(id);
    if (!s) continue;
    settle(s, "replaced", reason);
    s.finished = undefined;
    s.inFlight = undefined;
    s.replacedBy = [...added];
  }
  const fresh = new Set(added);
  for (const definition of ledger.subTasks) {
    const s = state.subTasks.get(definition.id);
    // Sub-tasks a reviewer changed in place (criteria, descriptions) take their new text.
    if (s?.status === "pending" && !fresh.has(definition.id)) s.subTask = definition;
  }
  for (const definition of ledger.subTasks) {
    // New work for what the acceptance found missing replaces nothing: a lineage of its own.
    if (fresh.has(definition.id) && !state.subTasks.has(definition.id))
      addSubTask(state, definition, replaced.length > 0 ? lineage + 1 : 0);
  }
}

/**
 * An attempt's result arrives: its usage, what it did at the boundary (refused by the sandbox,
 * left out beyond the run's directory), and where it leaves its sub-task or its candidate.
 */
function finishAttempt(
  s: SubTaskState,
  event: RunEventOf<"attempt-finished">,
  usage: AttemptUsage,
): void {
  s.usage = addUsage(s.usage, event.result.usage);
  usage.agent = addUsage(event.result.usage);
  s.lastDurationMs = event.result.durationMs;
  for (const refusal of event.result.refusals ?? []) {
    if (s.refusals.length >= maxKeptRefusals) break;
    s.refusals.push({ attempt: event.attempt, kind: refusal.kind, target: refusal.target });
  }
  if (event.result.outsideCwd)
    s.outsideCwd.push({ attempt: event.attempt, ...event.result.outsideCwd });
  const member = candidateOf(s, event.attempt);
  if (member) {
    if (event.result.outcome === "cancelled") {
      if (member.inFlight) member.inFlight.ended = true;
      return;
    }
    delete member.inFlight;
    member.result = event.result;
    if (event.commit) member.commit = event.commit;
    return;
  }
  if (event.commit) s.workFrom = event.commit;
  // A provider's limit is no try of the agent's: not judged, not a rung; the sub-task runs again.
  if (event.result.outcome === "rate-limited") {
    s.limited++;
    s.stepAttempts = Math.max(0, s.stepAttempts - 1);
    s.inFlight = undefined;
    return;
  }
  // A cancelled attempt did not finish its work: it stays in flight, to run again on resume
  // (under a new number: its result is known and there is nothing to take over).
  if (event.result.outcome === "cancelled") {
    if (s.inFlight) s.inFlight.ended = true;
    return;
  }
  s.inFlight = undefined;
  s.finished = { attempt: event.attempt, result: event.result };
}

/** A round of candidates begins (issue 27): its members, and one try of the step it stands for. */
function startRound(s: SubTaskState, event: RunEventOf<"candidates-started">): void {
  s.round = {
    round: event.round,
    reason: event.reason,
    ...(event.from ? { from: event.from } : {}),
    members: event.candidates.map((c) => ({ ...c })),
  };
  s.attempts = Math.max(s.attempts, ...event.candidates.map((c) => c.attempt));
  s.status = "running";
  s.finished = undefined;
  s.startedAt = event.time;
  // A round is one try of its step; the ladder's rung gets no retries after it.
  if (event.reason === "ladder") {
    s.onCandidatesRung = true;
    s.stepAttempts = 1;
  } else s.stepAttempts++;
}

/**
 * A candidate's attempt starts; one that `replaces` an attempt a stopped process never saw finish
 * takes its place in the round, and the replaced one is kept for the report with its tokens.
 */
function startCandidate(
  state: RunState,
  s: SubTaskState,
  event: RunEventOf<"sub-task-started">,
): void {
  s.status = "running";
  s.attempts = Math.max(s.attempts, event.attempt);
  const replaces = event.candidate?.replaces;
  const member =
    (replaces === undefined ? undefined : candidateOf(s, replaces)) ??
    candidateOf(s, event.attempt);
  if (!member) return;
  if (replaces !== undefined && member.attempt === replaces) {
    countInterrupted(state, s, replaces);
    s.round!.replaced = [
      ...(s.round!.replaced ?? []),
      {
        attempt: replaces,
        ...(member.agentModel ? { agentModel: member.agentModel } : {}),
        by: event.attempt,
      },
    ];
  }
  member.attempt = event.attempt;
  member.inFlight = { processes: [] };
  delete member.result;
  delete member.commit;
  delete member.entry;
}

/**
 * The choice of a round: recorded once. Only the winner goes on as complete; with no winner (none
 * complete, or the judge chose none) the best of them goes on as incomplete, for the ladder.
 */
function chooseInRound(s: SubTaskState, event: RunEventOf<"candidates-chosen">): void {
  if (!s.round || s.round.round !== event.round) return;
  const { type: _t, runId: _r, seq: _s, time: _ti, v: _v, subTaskId: _id, reason, ...rest } = event;
  const chosen = { ...rest, reason: s.round.reason, why: reason };
  s.round.chosen = chosen;
  s.rounds.push(chosen);
  const pick = s.round.members.find((m) => m.attempt === (event.winner ?? bestOf(s)));
  if (pick?.result && pick.entry) {
    const entry = event.winner === undefined ? notChosen(pick.entry, reason) : pick.entry;
    s.finished = { attempt: pick.attempt, result: pick.result, entry };
    s.entry = entry;
    // Nothing unchosen reaches the run's history: with no winner the next try starts afresh.
    s.workFrom = event.winner === undefined ? undefined : pick.commit;
  }
}

/** The round's winner could not land: the next complete candidate is the winner now. */
function giveWay(s: SubTaskState, event: RunEventOf<"candidate-gave-way">): void {
  const round = s.round;
  if (!round?.chosen || round.round !== event.round) return;
  round.gaveWay = [...(round.gaveWay ?? []), event.attempt];
  round.chosen.winner = event.winner;
  for (const outcome of round.chosen.candidates) {
    if (outcome.attempt === event.attempt) outcome.lost = event.reason;
    if (outcome.attempt === event.winner) delete outcome.lost;
  }
  const pick = round.members.find((m) => m.attempt === event.winner);
  if (pick?.result && pick.entry) {
    s.finished = { attempt: pick.attempt, result: pick.result, entry: pick.entry };
    s.entry = pick.entry;
    s.workFrom = pick.commit;
  }
}

/**
 * True when attempt `attempt` of the sub-task may be merged as its completion: its entry is
 * complete and, if it was a round's candidate, it is that round's winner. Every path that
 * completes a sub-task (an attempt, a round, a resume) asks this.
 */
export function mayComplete(s: SubTaskState, attempt: number, entry: ProgressEntry): boolean {
  if (!entry.completed) return false;
  const round = s.round;
  if (!round?.members.some((m) => m.attempt === attempt)) return true;
  return round.chosen !== undefined && round.chosen.winner === attempt;
}

/** A candidate's entry when the round chose none: incomplete, saying why, whatever its checks said. */
function notChosen(entry: ProgressEntry, why: string): ProgressEntry {
  if (!entry.completed) return entry;
  const feedback = oneLine(
    `No candidate of the round was chosen: ${why} Do the sub-task as its criteria ask.`,
    4000,
  );
  return {
    ...entry,
    completed: false,
    incomplete: "judged-incomplete",
    outputData: "",
    feedback,
  };
}

/** The candidate the ladder builds on when none was complete: most checks passed, then the first. */
function bestOf(s: SubTaskState): number | undefined {
  const judged = (s.round?.members ?? []).filter((m) => m.entry && m.result);
  const passed = (m: (typeof judged)[number]) => m.entry!.evidence.filter((e) => e.passed).length;
  judged.sort((a, b) => passed(b) - passed(a) || a.attempt - b.attempt);
  return judged[0]?.attempt;
}

/** Folds a provider's refusal: one more pause (unless it only extends one), its time, its cause. */
function providerLimited(state: RunState, event: RunEventOf<"provider-limited">): void {
  let waits = state.providers.get(event.key);
  if (!waits) {
    waits = { provider: event.provider, waits: 0, waitedMs: 0, rejected: 0, until: undefined };
    state.providers.set(event.key, waits);
  }
  waits.rejected++;
  if (event.until === undefined) {
    waits.exhausted = event.limit.message;
    if (event.stops)
      state.providerStop ??= event.reason ?? `${event.provider} refused: ${event.limit.message}`;
    return;
  }
  const at = Date.parse(event.time);
  const until = Date.parse(event.until);
  const from = Math.max(at, waits.until ?? 0);
  if (until > from) waits.waitedMs += until - from;
  if (waits.until === undefined || at >= waits.until) waits.waits++;
  waits.until = Math.max(until, waits.until ?? 0);
}
