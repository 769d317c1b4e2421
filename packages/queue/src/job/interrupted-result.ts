import { type AttemptResult, emptyUsage } from "@taskledger/core";

/**
 * A job that failed instead of finishing: its worker died (BullMQ's stalled check, with no
 * second chance, fails it) or threw, and the attempt counts as interrupted, the next one new; or
 * no worker ran to take it, and another attempt would wait the same: the ladder fails the sub-task
 * at once, saying why. Neither is the agent's doing.
 */
export function interruptedResult(jobId: string, error: unknown, started: number): AttemptResult {
  const noWorker = error instanceof NoWorkerError;
  const reason = error instanceof Error ? error.message : String(error);
  return {
    ...agentlessResult(
      noWorker ? reason : `The attempt was interrupted on its worker (job ${jobId}): ${reason}`,
      performance.now() - started,
    ),
    ...(noWorker ? { retryable: false } : {}),
    infrastructureError: true,
    details: noWorker ? { noWorker: true, jobId } : { interrupted: true, jobId },
  };
}

/** An error result of an attempt whose agent never ran or never answered: nothing but `error`. */
export function agentlessResult(error: string, durationMs: number): AttemptResult {
  return {
    outcome: "error",
    finalText: "",
    toolCalls: [],
    stepFinishReasons: [],
    filesChanged: [],
    usage: emptyUsage(),
    error,
    durationMs,
  };
}

/** No worker ran while an attempt waited past the bound; the job was taken off the queue. */
export class NoWorkerError extends Error {
  constructor(jobId: string, waitedMs: number, where: string) {
    super(
      `No worker took the attempt (job ${jobId}) within ${Math.round(waitedMs / 1000)} s: no ` +
        `worker is running. Start one with \`taskledger worker --redis ${where}\`.`,
    );
  }
}
