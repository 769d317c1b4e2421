import { format } from "node:util";
import { stripControl } from "@taskledger/core";
import type { ProviderCall } from "./provider-call.js";

/** Something a provider's SDK warned about while calling a model, as one line. */
export interface ModelWarning {
  provider: string;
  modelId: string;
  /** The SDK's own text, on one line, control characters removed. */
  message: string;
  /** True when the SDK says the model is deprecated or reaches end-of-life. */
  deprecated: boolean;
}

/**
 * `call`, with what its SDK prints through `console.warn` while it builds the request (Anthropic's
 * deprecated-model notice) handed to `onWarning` instead of the terminal. The swap lasts only the
 * synchronous start of the call, so no other code's warnings can land in it.
 */
export function routeSdkWarnings(
  call: ProviderCall,
  onWarning: (message: string) => void,
): ProviderCall {
  return async (request) => {
    // Loaded first, so the SDK builds its request inside the swap below, synchronously.
    await call.ready?.();
    const caught: string[] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => {
      caught.push(format(...args));
    };
    let pending: ReturnType<ProviderCall>;
    try {
      pending = call(request);
    } finally {
      console.warn = original;
    }
    for (const text of caught) onWarning(oneLine(text));
    return pending;
  };
}

/** Several lines joined as sentences, terminal control characters dropped. */
export function oneLine(text: string): string {
  return stripControl(text)
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line, index, lines) =>
      index < lines.length - 1 && !/[.!?:]$/.test(line) ? `${line}.` : line,
    )
    .join(" ");
}

/** The default: Node's own warning channel, which a host can listen to with `process.on("warning")`. */
export function emitModelWarning(warning: ModelWarning): void {
  process.emitWarning(`${warning.provider}/${warning.modelId}: ${warning.message}`, {
    type: "TaskLedgerModelWarning",
    code: warning.deprecated ? "TASKLEDGER_MODEL_DEPRECATED" : "TASKLEDGER_MODEL_WARNING",
  });
}
