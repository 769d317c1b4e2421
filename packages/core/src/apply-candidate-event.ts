import type { RunEventOf } from "./run-events.js";
import type { SubTaskState } from "./run-state.js";

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

/** The choice of a round: recorded once, and the winner (or the best of none) is what goes on. */
export function chooseInRound(s: SubTaskState, event: RunEventOf<"candidates-chosen">): void {
  if (!s.round || s.round.round !== event.round) return;
  const { type: _t, runId: _r, seq: _s, time: _ti, v: _v, subTaskId: _id, reason, ...rest } = event;
  const chosen = { ...rest, reason: s.round.reason, why: reason };
  s.round.chosen = chosen;
  s.rounds.push(chosen);
  // The winner goes on to be merged; with none, the best of them is what the ladder builds on.
  const pick = s.round.members.find((m) => m.attempt === (event.winner ?? bestOf(s)));
  if (pick?.result && pick.entry) {
    s.finished = { attempt: pick.attempt, result: pick.result, entry: pick.entry };
    s.entry = pick.entry;
    s.workFrom = pick.commit;
  }
}

/** The candidate the ladder builds on when none was complete: most checks passed, then the first. */
function bestOf(s: SubTaskState): number | undefined {
  const judged = (s.round?.members ?? []).filter((m) => m.entry && m.result);
  const passed = (m: (typeof judged)[number]) => m.entry!.evidence.filter((e) => e.passed).length;
  judged.sort((a, b) => passed(b) - passed(a) || a.attempt - b.attempt);
  return judged[0]?.attempt;
}
