import { AbortedError, isAbortError, ModelError, oneLine } from "@taskledger/core";

/** HTTP statuses worth another try: request timeout, conflict, rate limit, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

// Shapes of provider keys, masked even when a server echoes a key we were not given.
const keyShapes = [
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\bxai-[A-Za-z0-9_-]{8,}/g,
  /\bAIza[A-Za-z0-9_-]{20,}/g,
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
];

/** Removes the key (and anything shaped like a provider key) from text that may be shown. */
export function redactSecrets(text: string, apiKey: string | undefined): string {
  let out = text;
  if (apiKey && apiKey.length >= 4) out = out.split(apiKey).join("[redacted]");
  for (const shape of keyShapes) out = out.replace(shape, "[redacted]");
  return out;
}

export interface ErrorContext {
  provider: string;
  apiKey: string | undefined;
  /** The caller's own signal: its abort is a cancellation, not a failure. */
  abortSignal: AbortSignal | undefined;
  /** The per-attempt timeout signal and its length, to tell a timeout from a cancellation. */
  timeoutSignal: AbortSignal;
  timeoutMs: number;
}

/**
 * Turns whatever an SDK threw into `AbortedError` or a `ModelError` naming the provider and the
 * status. The SDK's error is not kept as `cause` (its body or headers may hold the key); a plain
 * copy of its name and redacted message is.
 */
export function toModelError(error: unknown, context: ErrorContext): AbortedError | ModelError {
  const { provider, apiKey } = context;
  if (context.abortSignal?.aborted) {
    return new AbortedError(`The ${provider} call was aborted`);
  }
  if (ModelError.isInstance(error) || AbortedError.isInstance(error)) return error;
  if (context.timeoutSignal.aborted) {
    return new ModelError({
      message: `${provider} did not answer within ${context.timeoutMs} ms`,
      provider,
      isRetryable: true,
    });
  }
  const name = errorName(error);
  const rawMessage = redactSecrets(errorMessage(error), apiKey);
  const cause = plainCause(name, rawMessage);
  const status = errorStatus(error);
  if (status !== undefined) {
    const wait = retryAfterMs(error);
    return new ModelError({
      message: `${provider} answered HTTP ${status}: ${shorten(rawMessage)}`,
      provider,
      statusCode: status,
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
      isRetryable: isRetryableStatus(status),
      cause,
    });
  }
  if (isAbortError(error) || /timeout|timed out/i.test(name)) {
    return new ModelError({
      message: `${provider} request timed out: ${shorten(rawMessage)}`,
      provider,
      isRetryable: true,
      cause,
    });
  }
  if (isConnectionError(error, name)) {
    return new ModelError({
      message: `Could not reach ${provider}: ${shorten(rawMessage)}`,
      provider,
      isRetryable: true,
      cause,
    });
  }
  if (error instanceof SyntaxError) {
    // A body cut off mid-way or not JSON at all: a transport fault, worth another try.
    return new ModelError({
      message: `${provider} sent a response that could not be read: ${shorten(rawMessage)}`,
      provider,
      isRetryable: true,
      cause,
    });
  }
  return new ModelError({
    message: `${provider} call failed: ${shorten(rawMessage)}`,
    provider,
    isRetryable: false,
    cause,
  });
}

/** The `retry-after` a provider sent with an error, in milliseconds, when it sent one. */
export function retryAfterMs(error: unknown): number | undefined {
  const headers = (error as { headers?: unknown } | null)?.headers;
  if (!headers || typeof (headers as Headers).get !== "function") return undefined;
  const h = headers as Headers;
  const ms = Number(h.get("retry-after-ms"));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const value = h.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function errorStatus(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === "number" && status >= 400 && status < 600 ? status : undefined;
}

function errorName(error: unknown): string {
  if (error instanceof Error) return error.constructor?.name || error.name;
  return typeof error;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

function isConnectionError(error: unknown, name: string): boolean {
  if (/connection/i.test(name)) return true;
  // Node's fetch reports refused or reset sockets as `TypeError: fetch failed` with a coded cause.
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return (
    error instanceof TypeError &&
    (typeof cause?.code === "string" || /fetch failed/.test(String(error)))
  );
}

function plainCause(name: string, message: string): Error {
  const cause = new Error(message);
  cause.name = name;
  return cause;
}

function shorten(text: string): string {
  return oneLine(text, 501);
}
