import { countInterrupted } from "./attempt-usage.js";
import type { ProgressEntry } from "./progress-entry.js";
import type { RunEventOf } from "./run-events.js";
import { candidateOf, type RunState, type SubTaskState } from "./run-state.js";
import { oneLine } from "./text-clip.js";

/** A round of candidates begins (issue 27): its members, and one try of the step it stands for. */
export function startRound(s: SubTaskState, event: RunEventOf<"candidates-started">): void {
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
export function startCandidate(
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
export function chooseInRound(s: SubTaskState, event: RunEventOf<"candidates-chosen">): void {
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
