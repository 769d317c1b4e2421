import type { AttemptJobEvent } from "./attempt-worker.js";

/**
 * The worker's one line for a job's start or end (`taskledger worker` prints it on stderr); a
 * rate-limited end names the provider and when the queue lets work in again.
 */
export function jobLine(event: AttemptJobEvent): string {
  if (event.type === "started") return `started ${event.jobId}`;
  const ended = `finished ${event.jobId}: ${event.outcome}`;
  if (event.outcome !== "rate-limited") return ended;
  const why = [
    event.limit?.provider,
    event.limit?.kind === "quota"
      ? "quota spent, the queue goes on"
      : event.pausedForMs !== undefined
        ? `resuming in ${Math.max(1, Math.round(event.pausedForMs / 1000))} s`
        : undefined,
  ].filter((part) => part !== undefined);
  return why.length > 0 ? `${ended} (${why.join(", ")})` : ended;
}
