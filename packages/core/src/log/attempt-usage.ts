import { addUsage, emptyUsage, type Usage } from "../usage/usage.js";
import type { RunState, SubTaskState } from "./run-state.js";

/** What attempt `attempt` of the sub-task spent, made empty on first use. */
export function attemptUsageOf(s: SubTaskState, attempt: number) {
  let found = s.attemptUsage.find((a) => a.attempt === attempt);
  if (!found) {
    found = { attempt, agent: emptyUsage(), evaluation: emptyUsage() };
    s.attemptUsage.push(found);
  }
  return found;
}

/** Keeps a running attempt's finished step's tokens until the attempt reports its own. */
export function addStreamed(s: SubTaskState, attempt: number, usage: Usage): void {
  s.streamed ??= [];
  const found = s.streamed.find((x) => x.attempt === attempt);
  if (found) found.usage = addUsage(found.usage, usage);
  else s.streamed.push({ attempt, usage: addUsage(usage) });
}

/** Counts the streamed steps of an attempt that will never report its own usage. */
export function countInterrupted(state: RunState, s: SubTaskState, attempt: number): void {
  const found = s.streamed?.find((x) => x.attempt === attempt);
  if (!found) return;
  s.streamed = s.streamed!.filter((x) => x !== found);
  state.usage.agents = addUsage(state.usage.agents, found.usage);
  s.usage = addUsage(s.usage, found.usage);
  const spent = attemptUsageOf(s, attempt);
  spent.agent = addUsage(spent.agent, found.usage);
}
