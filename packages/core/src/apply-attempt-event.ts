import type { RunEventOf } from "./run-events.js";
import { type AttemptUsage, candidateOf, maxKeptRefusals, type SubTaskState } from "./run-state.js";
import { addUsage } from "./usage.js";

/**
 * An attempt's result arrives: its usage, what it did at the boundary (refused by the sandbox,
 * left out beyond the run's directory), and where it leaves its sub-task or its candidate.
 */
export function finishAttempt(
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
  // A cancelled attempt did not finish its work: it stays in flight, to run again on resume
  // (under a new number: its result is known and there is nothing to take over).
  if (event.result.outcome === "cancelled") {
    if (s.inFlight) s.inFlight.ended = true;
    return;
  }
  s.inFlight = undefined;
  s.finished = { attempt: event.attempt, result: event.result };
}
