import type { AttemptOutcome, ProviderLimit } from "@taskledger/core";
import { isConfigRejection, opencodeErrorMessage } from "./opencode-stderr.js";
import { describeProviderLimit, providerLimit } from "./provider-limit.js";
import type { Transcript } from "./transcript.js";

/** How the process ended, as the executor saw it. */
export interface ProcessEnd {
  exitCode: number | null;
  signal: string | null;
  /** Why the executor ended it itself, if it did. */
  stoppedBy?:
    | "abort"
    | "timeout"
    | "step-limit"
    | "unknown-finish-loop"
    | "exit"
    | "provider-refused";
  /** Could not start (spawn error). */
  spawnError?: string;
  /** The agent refused its config (opencode's server says so when a session is made). */
  configRejection?: string;
  /** The opencode server the attempt ran on died or stopped answering mid-attempt (retryable). */
  serverLost?: string;
  /** What opencode wrote to stderr (its tail). */
  stderr?: string;
}

/** A stop with no text and at most this many output tokens after tool use is the seed's truncation. */
export const tinyStopOutputTokens = 2;

/**
 * Decides how an attempt ended. Order matters: the executor's own stops first, then errors the
 * agent reported, then the process's exit, then what the last model step said.
 */
export function decideOutcome(
  end: ProcessEnd,
  transcript: Transcript,
  agent = "opencode",
  readOnly = false,
  /** The agent model's provider (`anthropic`), named in a provider limit. */
  provider?: string,
): {
  outcome: AttemptOutcome;
  error?: string;
  retryable?: false;
  infrastructureError?: true;
  limit?: ProviderLimit;
} {
  if (end.stoppedBy === "abort") return { outcome: "cancelled", error: "aborted" };
  if (end.stoppedBy === "timeout") return { outcome: "timeout", error: "the attempt timed out" };
  if (end.stoppedBy === "step-limit") {
    return { outcome: "error", error: `stopped after ${transcript.stepCount} steps (step limit)` };
  }
  if (end.stoppedBy === "unknown-finish-loop") {
    return {
      outcome: "error",
      error: `the model stream ended without a finish reason ${transcript.unknownFinishStreak} times in a row; ${agent} would loop`,
    };
  }
  // Not the agent's doing: nothing it did is to be judged (the next attempt is told why).
  if (end.spawnError) return { outcome: "error", error: end.spawnError, infrastructureError: true };
  if (end.serverLost) return { outcome: "error", error: end.serverLost, infrastructureError: true };
  if (end.configRejection) {
    return {
      outcome: "error",
      error: `${agent} rejected its config: ${end.configRejection}`,
      retryable: false,
    };
  }
  const lastError = transcript.errors.at(-1);
  // A key or login the provider refuses fails every attempt alike: no retry or replan can fix it.
  if (lastError && isProviderRefusal(lastError)) {
    return {
      outcome: "error",
      error: `${agent}'s model provider refused its credentials (status ${lastError.statusCode}): ${lastError.message}; check the agent's key, login and endpoint`,
      retryable: false,
    };
  }
  // A rate limit, an overload or a spent quota, after the agent's own retries: not its doing.
  const limit = lastError && providerLimit(lastError, provider);
  if (limit) {
    return { outcome: "rate-limited", error: describeProviderLimit(limit, agent), limit };
  }
  if (lastError) {
    const status = lastError.statusCode === undefined ? "" : ` (status ${lastError.statusCode})`;
    return { outcome: "error", error: `${lastError.message}${status}` };
  }
  if (end.signal)
    return {
      outcome: "error",
      error: `${agent} was killed by ${end.signal}`,
      infrastructureError: true,
    };
  // An agent that stops because output ran out may say so with a failing exit (Claude Code, Codex).
  if (transcript.lastFinishReason === "length" && !transcript.errors.length) {
    return { outcome: "truncated", error: "the model's output ran out (length)" };
  }
  if (end.exitCode !== 0) {
    const exited = `${agent} exited with code ${end.exitCode}`;
    // Only opencode's stderr has a known shape; another agent's error arrives as an event.
    const said = agent === "opencode" ? opencodeErrorMessage(end.stderr ?? "") : undefined;
    if (said === undefined) return { outcome: "error", error: exited };
    // A config opencode refuses fails every attempt alike: no retry or replan can fix it.
    return isConfigRejection(said)
      ? { outcome: "error", error: `opencode rejected its config: ${said}`, retryable: false }
      : { outcome: "error", error: `${exited}: ${said}` };
  }
  const rejection = transcript.permissionRejections.at(-1);
  // A read-only attempt is refused every change by design: the agent was told and went on.
  if (rejection && !readOnly)
    return { outcome: "error", error: `a permission was rejected: ${rejection}` };
  const reason = transcript.lastFinishReason;
  if (reason === undefined)
    return { outcome: "error", error: `${agent} ended without a model step` };
  if (reason === "length")
    return { outcome: "truncated", error: "the model's output ran out (length)" };
  if (reason === "stop") {
    const output = transcript.lastStepUsage?.outputTokens ?? 0;
    const afterTools =
      transcript.toolCallsBeforeLastStep > 0 && transcript.toolCallsInLastStep === 0;
    // Only a stop that says nothing at all after tools is the seed's cut-off; a short answer
    // ("Done.") is a finished turn, and whether the work is done is the evaluator's to decide.
    if (
      afterTools &&
      output <= tinyStopOutputTokens &&
      transcript.finalTextOfLastStep.trim() === ""
    ) {
      return {
        outcome: "truncated",
        error: `the model stopped after tool use with ${output} output tokens`,
      };
    }
    return { outcome: "finished" };
  }
  return { outcome: "truncated", error: `the last step ended with "${reason}", not "stop"` };
}

/** An agent's provider said its key or login is not accepted (401) or not allowed (403). */
export function isProviderRefusal(error: { statusCode?: number | undefined }): boolean {
  return error.statusCode === 401 || error.statusCode === 403;
}
