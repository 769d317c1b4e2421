import type { AttemptResult } from "@taskledger/core";
import { decideOutcome, type ProcessEnd } from "./attempt-outcome.js";
import { defaultTranscriptLimits, Transcript } from "./transcript.js";

/**
 * The one `AttemptResult` every agent executor returns (opencode's CLI and server executors,
 * Claude Code's, Codex's), so an evaluator cannot tell them apart.
 */
export function attemptResult(
  transcript: Transcript,
  end: ProcessEnd,
  started: number,
  extra: {
    executor: string;
    model: string;
    pid?: number | undefined;
    stderr?: string;
    attemptDir?: string | undefined;
    serverUrl?: string | undefined;
    /** A read-only attempt: a refused tool call is what it was told, not how it ended. */
    readOnly?: boolean;
    /** `provider/model` when `model` names no provider (Claude Code's `anthropic/…`). */
    pricedModel?: string;
  },
): AttemptResult {
  const { outcome, error, retryable, infrastructureError, limit } = decideOutcome(
    { ...end, stderr: extra.stderr ?? "" },
    transcript,
    extra.executor === "opencode-server" ? "opencode" : extra.executor,
    extra.readOnly === true,
    providerOf(extra.pricedModel ?? extra.model),
  );
  const result: AttemptResult = {
    outcome,
    finalText: transcript.finalText,
    toolCalls: transcript.toolCalls,
    stepFinishReasons: transcript.stepFinishReasons,
    filesChanged: transcript.filesChanged,
    usage: transcript.usage,
    durationMs: performance.now() - started,
    details: {
      executor: extra.executor,
      model: extra.model,
      sessionId: transcript.sessionId,
      pid: extra.pid,
      exitCode: end.exitCode,
      signal: end.signal,
      stoppedBy: end.stoppedBy,
      steps: transcript.stepCount,
      toolCallCount: transcript.toolCallCount,
      toolCallsDropped: transcript.toolCallsDropped,
      stepsDropped: transcript.stepsDropped,
      errors: transcript.errors,
      errorCount: transcript.errorCount,
      statusCode: transcript.errors.at(-1)?.statusCode,
      permissionRejected: transcript.permissionRejections.length > 0,
      permissionRejections: transcript.permissionRejections,
      unknownEvents: transcript.unknownEvents,
      stderr: extra.stderr ?? "",
      attemptDir: extra.attemptDir,
      ...(extra.serverUrl === undefined ? {} : { serverUrl: extra.serverUrl }),
    },
  };
  if (error !== undefined) result.error = error;
  if (limit !== undefined) result.limit = limit;
  if (retryable === false) result.retryable = false;
  if (infrastructureError) result.infrastructureError = true;
  return result;
}

/**
 * The result of an attempt whose server went away with it (a service that ran it was killed): an
 * infrastructure error, retried like a lost server's.
 */
export function lostAttemptResult(input: {
  cwd: string;
  model: string;
  started: number;
  reason: string;
  readOnly?: boolean;
}): AttemptResult {
  return attemptResult(
    new Transcript(input.cwd, defaultTranscriptLimits),
    { exitCode: null, signal: null, serverLost: input.reason },
    input.started,
    { executor: "opencode-server", model: input.model, readOnly: input.readOnly === true },
  );
}

/** The provider part of `provider/model`, when it has one. */
function providerOf(model: string): string | undefined {
  const slash = model.indexOf("/");
  return slash > 0 ? model.slice(0, slash) : undefined;
}
