import type { FinishReason } from "../ports/model.js";
import type { Usage } from "../usage/usage.js";

// One base class with a stable `code`. `isInstance` uses a `Symbol.for` marker rather than
// `instanceof`, so it works across duplicate copies of the package in one process.

const baseMarker = Symbol.for("taskledger.error");

export type TaskLedgerErrorCode =
  | "invalid-request"
  | "invalid-plan"
  | "invalid-config"
  | "invalid-model-output"
  | "model-error"
  | "executor-error"
  | "store-error"
  | "workspace-error"
  | "queue-error"
  | "run-not-found"
  | "unsupported-log-version"
  | "unexpected-call"
  | "plan-review-failed"
  | "sandbox-unavailable"
  | "aborted";

export interface TaskLedgerErrorOptions {
  message: string;
  cause?: unknown;
  isRetryable?: boolean;
}

export class TaskLedgerError extends Error {
  protected readonly [baseMarker] = true;
  readonly code: TaskLedgerErrorCode;
  readonly isRetryable: boolean;
  /** The run the error happened in, when it was raised inside one. */
  runId: string | undefined;

  constructor(code: TaskLedgerErrorCode, options: TaskLedgerErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "TaskLedgerError";
    this.code = code;
    this.isRetryable = options.isRetryable ?? false;
    this.runId = undefined;
  }

  static isInstance(error: unknown): error is TaskLedgerError {
    return hasMarker(error, baseMarker);
  }
}

function hasMarker(error: unknown, marker: symbol): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as Record<symbol, unknown>)[marker] === true
  );
}

/** The request given to a run is empty, too large or otherwise unusable. */
export class InvalidRequestError extends TaskLedgerError {
  constructor(message: string) {
    super("invalid-request", { message });
    this.name = "InvalidRequestError";
  }
  static override isInstance(error: unknown): error is InvalidRequestError {
    return TaskLedgerError.isInstance(error) && error.code === "invalid-request";
  }
}

/** An option given to the manager or a component is out of range or missing. */
export class InvalidConfigError extends TaskLedgerError {
  constructor(message: string) {
    super("invalid-config", { message });
    this.name = "InvalidConfigError";
  }
  static override isInstance(error: unknown): error is InvalidConfigError {
    return TaskLedgerError.isInstance(error) && error.code === "invalid-config";
  }
}

export type PlanIssueKind =
  | "schema"
  | "empty-plan"
  | "too-many-sub-tasks"
  | "duplicate-id"
  | "unknown-dependency"
  | "self-dependency"
  | "cycle";

/** One thing wrong with a Task Ledger; `subTaskId` names the offending sub-task when there is one. */
export interface PlanIssue {
  kind: PlanIssueKind;
  subTaskId?: string;
  message: string;
}

/** A Task Ledger that cannot run: every issue found is listed, each naming its sub-task. */
export class PlanValidationError extends TaskLedgerError {
  readonly issues: readonly PlanIssue[];
  /** Tokens the model's unusable plans cost, when a model wrote them. */
  readonly usage: Usage | undefined;

  constructor(
    issues: readonly PlanIssue[],
    options: { cause?: unknown; context?: string; usage?: Usage } = {},
  ) {
    const lines = issues.map((issue) => `- ${issue.message}`).join("\n");
    super("invalid-plan", {
      message: `${options.context ?? "Invalid Task Ledger"}:\n${lines}`,
      cause: options.cause,
    });
    this.name = "PlanValidationError";
    this.issues = issues;
    this.usage = options.usage;
  }
  static override isInstance(error: unknown): error is PlanValidationError {
    return TaskLedgerError.isInstance(error) && error.code === "invalid-plan";
  }
}

/**
 * The host's plan review hook threw, or answered with no usable decision (not `approve`, `edit`
 * or `reject`, or an edit that does not validate) as many times as it was asked: nothing ran.
 */
export class PlanReviewError extends TaskLedgerError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("plan-review-failed", { message, ...options });
    this.name = "PlanReviewError";
  }
  static override isInstance(error: unknown): error is PlanReviewError {
    return TaskLedgerError.isInstance(error) && error.code === "plan-review-failed";
  }
}

/** A model's answer could not be parsed as JSON or did not match the requested schema. */
export class StructuredOutputError extends TaskLedgerError {
  /** The model's raw text, cut to a bounded length. */
  readonly text: string;
  /** Tokens the unusable answer (and its repair) still cost, so reports count them. */
  readonly usage: Usage | undefined;
  /** `length` when the answer was cut off at the output limit: a repair would be cut too. */
  readonly finishReason: FinishReason | undefined;

  constructor(
    message: string,
    options: { text: string; cause?: unknown; usage?: Usage; finishReason?: FinishReason },
  ) {
    super("invalid-model-output", { message, cause: options.cause });
    this.name = "StructuredOutputError";
    this.text = options.text.length > 4000 ? `${options.text.slice(0, 4000)}…` : options.text;
    this.usage = options.usage;
    this.finishReason = options.finishReason;
  }
  static override isInstance(error: unknown): error is StructuredOutputError {
    return TaskLedgerError.isInstance(error) && error.code === "invalid-model-output";
  }
}

/** A model call failed: a provider error, a timeout, a refused key. Never carries the API key. */
export class ModelError extends TaskLedgerError {
  readonly provider: string;
  readonly statusCode: number | undefined;
  /** How long the provider asked to wait (its `Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;

  constructor(options: {
    message: string;
    provider: string;
    statusCode?: number;
    retryAfterMs?: number;
    isRetryable?: boolean;
    cause?: unknown;
  }) {
    super("model-error", options);
    this.name = "ModelError";
    this.provider = options.provider;
    this.statusCode = options.statusCode;
    this.retryAfterMs = options.retryAfterMs;
  }
  static override isInstance(error: unknown): error is ModelError {
    return TaskLedgerError.isInstance(error) && error.code === "model-error";
  }
}

/** The executor could not run an attempt at all (as opposed to an attempt that ended badly). */
export class ExecutorError extends TaskLedgerError {
  constructor(message: string, options: { cause?: unknown; isRetryable?: boolean } = {}) {
    super("executor-error", { message, ...options });
    this.name = "ExecutorError";
  }
  static override isInstance(error: unknown): error is ExecutorError {
    return TaskLedgerError.isInstance(error) && error.code === "executor-error";
  }
}

/** The run store could not append or read a record. */
export class StoreError extends TaskLedgerError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("store-error", { message, ...options });
    this.name = "StoreError";
  }
  static override isInstance(error: unknown): error is StoreError {
    return TaskLedgerError.isInstance(error) && error.code === "store-error";
  }
}

/** Why a git workspace could not be used. */
export type WorkspaceErrorReason =
  | "git-missing"
  | "not-a-repository"
  | "bare-repository"
  | "detached-head"
  | "operation-in-progress"
  | "setup-failed"
  | "git-failed";

/** The run's workspace (git worktrees) could not be set up, or git failed under it. */
export class WorkspaceError extends TaskLedgerError {
  readonly reason: WorkspaceErrorReason;

  constructor(
    reason: WorkspaceErrorReason,
    message: string,
    options: { cause?: unknown; isRetryable?: boolean } = {},
  ) {
    super("workspace-error", { message, ...options });
    this.name = "WorkspaceError";
    this.reason = reason;
  }
  static override isInstance(error: unknown): error is WorkspaceError {
    return TaskLedgerError.isInstance(error) && error.code === "workspace-error";
  }
}

/** Why attempts could not go through the queue. */
export type QueueErrorReason = "redis-unreachable" | "remote-failed" | "needs-worktree";

/** The queue of attempts (Redis, BullMQ) or the git remote that carries their work failed. */
export class QueueError extends TaskLedgerError {
  readonly reason: QueueErrorReason;

  constructor(
    reason: QueueErrorReason,
    message: string,
    options: { cause?: unknown; isRetryable?: boolean } = {},
  ) {
    super("queue-error", { message, ...options });
    this.name = "QueueError";
    this.reason = reason;
  }
  static override isInstance(error: unknown): error is QueueError {
    return TaskLedgerError.isInstance(error) && error.code === "queue-error";
  }
}

/** `resume` was given a run id the store holds no records for. */
export class RunNotFoundError extends TaskLedgerError {
  constructor(runId: string) {
    super("run-not-found", { message: `The run store has no records of run "${runId}".` });
    this.name = "RunNotFoundError";
    this.runId = runId;
  }
  static override isInstance(error: unknown): error is RunNotFoundError {
    return TaskLedgerError.isInstance(error) && error.code === "run-not-found";
  }
}

/** A run's log was written by a newer taskledger, in a format this one cannot read. */
export class UnsupportedLogVersionError extends TaskLedgerError {
  readonly version: unknown;

  constructor(runId: string, version: unknown, supported: number) {
    super("unsupported-log-version", {
      message:
        `Run "${runId}" was logged in format version ${JSON.stringify(version)}; this taskledger ` +
        `reads versions 1 to ${supported}. Resume it with a newer taskledger.`,
    });
    this.name = "UnsupportedLogVersionError";
    this.version = version;
    this.runId = runId;
  }
  static override isInstance(error: unknown): error is UnsupportedLogVersionError {
    return TaskLedgerError.isInstance(error) && error.code === "unsupported-log-version";
  }
}

/** A test double was called more often than its script allows. */
export class UnexpectedCallError extends TaskLedgerError {
  constructor(message: string) {
    super("unexpected-call", { message });
    this.name = "UnexpectedCallError";
  }
  static override isInstance(error: unknown): error is UnexpectedCallError {
    return TaskLedgerError.isInstance(error) && error.code === "unexpected-call";
  }
}

/** `--sandbox required` where the OS sandbox cannot work (no bubblewrap, no user namespaces, …). */
export class SandboxUnavailableError extends TaskLedgerError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("sandbox-unavailable", { message, ...options });
    this.name = "SandboxUnavailableError";
  }
  static override isInstance(error: unknown): error is SandboxUnavailableError {
    return TaskLedgerError.isInstance(error) && error.code === "sandbox-unavailable";
  }
}

/** An operation stopped because its `AbortSignal` fired. */
export class AbortedError extends TaskLedgerError {
  constructor(message = "The operation was aborted", options: { cause?: unknown } = {}) {
    super("aborted", { message, ...options });
    this.name = "AbortedError";
  }
  static override isInstance(error: unknown): error is AbortedError {
    return TaskLedgerError.isInstance(error) && error.code === "aborted";
  }
}

/** True for our `AbortedError` and for the platform's `AbortError` (fetch, timers, SDKs). */
export function isAbortError(error: unknown): boolean {
  if (AbortedError.isInstance(error)) return true;
  return (
    typeof error === "object" &&
    error !== null &&
    ((error as { name?: unknown }).name === "AbortError" ||
      (error as { name?: unknown }).name === "APIUserAbortError")
  );
}
