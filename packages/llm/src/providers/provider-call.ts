import type { FinishReason, ModelMessage, Usage } from "@taskledger/core";
import type { ProviderJsonSchema } from "./json-schema.js";

/**
 * How a structured call asks for JSON. `schema`: the provider's native JSON Schema feature
 * (OpenAI-style `json_schema`, Anthropic `output_config.format`, Gemini `responseJsonSchema`).
 * `tool`: Anthropic only, a forced tool whose input is the answer. `json-object`: JSON mode without
 * a schema (OpenAI-style `json_object`, Gemini `application/json`), schema in the prompt.
 * `prompt`: nothing but the prompt, for servers with no JSON support at all.
 */
export type JsonMode = "schema" | "tool" | "json-object" | "prompt";

/** One HTTP call's worth of request, already shaped by the model client. */
export interface ProviderRequest {
  system: string | undefined;
  messages: ModelMessage[];
  /** Present for a structured call. */
  output:
    | {
        name: string;
        description: string | undefined;
        jsonSchema: ProviderJsonSchema;
        mode: JsonMode;
      }
    | undefined;
  maxOutputTokens: number;
  /** Aborts on the caller's signal or on this attempt's timeout. */
  signal: AbortSignal;
}

export interface ProviderResponse {
  /** The answer's text; for a forced tool, the JSON of its input. */
  text: string;
  usage: Usage;
  finishReason: FinishReason;
}

/**
 * One attempt against one provider through its SDK; retries and repair are the caller's. `ready`
 * loads the SDK, after which a call reaches the SDK synchronously (see `routeSdkWarnings`).
 */
export type ProviderCall = ((request: ProviderRequest) => Promise<ProviderResponse>) & {
  ready?: () => Promise<void>;
};

/**
 * A provider's SDK client, made when first needed rather than when the package is imported
 * (import cost); a failed load is tried again next time.
 */
export function lazyClient<T>(make: () => Promise<T>): {
  get(): T | undefined;
  load(): Promise<T>;
} {
  let client: T | undefined;
  let loading: Promise<T> | undefined;
  return {
    get: () => client,
    load() {
      loading ??= make().then(
        (made) => {
          client = made;
          return made;
        },
        (error: unknown) => {
          loading = undefined;
          throw error;
        },
      );
      return loading;
    },
  };
}
