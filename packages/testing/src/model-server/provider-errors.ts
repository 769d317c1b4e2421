import type { ScriptedHttpError } from "./model-server.js";

// Providers' limit errors as they send them, for scripting what an agent meets after its retries.

/** OpenAI's spent quota: a 429 whose type and code are `insufficient_quota` (waiting does not help). */
export function insufficientQuotaError(headers: Record<string, string> = {}): ScriptedHttpError {
  return {
    status: 429,
    headers,
    body: {
      error: {
        message:
          "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        type: "insufficient_quota",
        param: null,
        code: "insufficient_quota",
      },
    },
  };
}

/** Anthropic's overload: a 529 `overloaded_error` (503 where a gateway says it instead). */
export function overloadedError(
  headers: Record<string, string> = {},
  status: 529 | 503 = 529,
): ScriptedHttpError {
  return {
    status,
    headers,
    body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  };
}
