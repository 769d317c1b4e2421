import { AbortedError } from "@taskledger/core";

/** Like `signal.throwIfAborted()`, but with our `AbortedError` so callers check one error type. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new AbortedError(undefined, { cause: signal.reason });
}
