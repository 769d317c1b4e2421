import { InvalidConfigError, type LanguageModel } from "@taskledger/core";
import { createPricing, type PriceTable, type Pricing } from "../prices/price-table.js";
import { createAnthropicCall } from "../providers/anthropic-call.js";
import { createGoogleCall } from "../providers/google-call.js";
import { createOpenAICall } from "../providers/openai-call.js";
import type { JsonMode, ProviderCall } from "../providers/provider-call.js";
import { type Backoff, ProviderModel } from "../providers/provider-model.js";
import {
  emitModelWarning,
  type ModelWarning,
  routeSdkWarnings,
} from "../providers/sdk-warnings.js";

export type Provider = "anthropic" | "openai" | "google" | "xai" | "openai-compatible";

export interface CreateModelOptions {
  provider: Provider;
  /** The provider's model id, such as those in `defaultModels`: `claude-opus-5-5`, `gpt-6-sol`, … */
  model: string;
  /** Defaults to the provider's usual variable; `openai-compatible` reads none. */
  apiKey?: string;
  /** Required for `openai-compatible` (`http://localhost:11434/v1`); the SDK's default otherwise. */
  baseURL?: string;
  /** Per attempt, in milliseconds. Default 120,000. */
  timeout?: number;
  /** Retries after the first attempt, on 408/409/429/5xx, timeouts and connection errors. Default 2. */
  maxRetries?: number;
  backoff?: Backoff;
  /** How structured calls ask for JSON; default `schema` (the provider's native feature). */
  jsonMode?: JsonMode;
  /** When a request gives none. Default 8,192. */
  maxOutputTokens?: number;
  /** The host's prices by `provider/model` or model id, over the bundled price table. */
  prices?: PriceTable;
  /**
   * Prices each call's usage; default `createPricing({ prices })`. A model it cannot price is
   * named in the usage's `unpricedModels` instead of getting a cost.
   */
  pricing?: Pricing;
  /** Read instead of `process.env` for default keys (tests, multi-tenant hosts). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * What the provider's SDK warns about (a deprecated model), once per message per model, instead
   * of the SDK printing it on every call. Default: `process.emitWarning`.
   */
  onWarning?: (warning: ModelWarning) => void;
}

const keyVariables: Record<Provider, readonly string[]> = {
  anthropic: ["ANTHROPIC_API_KEY"],
  openai: ["OPENAI_API_KEY"],
  google: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
  xai: ["XAI_API_KEY"],
  // Never fall back to another provider's key: it would be sent to an arbitrary server.
  "openai-compatible": [],
};

const xaiBaseURL = "https://api.x.ai/v1";

/** A `LanguageModel` for the manager and the evaluator, backed by the provider's own SDK. */
export function createModel(options: CreateModelOptions): LanguageModel {
  const { provider, model } = options;
  if (!(provider in keyVariables)) {
    throw new InvalidConfigError(
      `Unknown provider "${String(provider)}"; expected one of ${Object.keys(keyVariables).join(", ")}`,
    );
  }
  if (typeof model !== "string" || model.trim() === "") {
    throw new InvalidConfigError(`A model id is required for provider "${provider}"`);
  }
  const timeoutMs = positiveInteger(options.timeout, 120_000, "timeout");
  const maxRetries = nonNegativeInteger(options.maxRetries, 2, "maxRetries");
  const maxOutputTokens = positiveInteger(options.maxOutputTokens, 8192, "maxOutputTokens");
  const backoff = {
    initialDelayMs: nonNegativeInteger(
      options.backoff?.initialDelayMs,
      500,
      "backoff.initialDelayMs",
    ),
    maxDelayMs: nonNegativeInteger(options.backoff?.maxDelayMs, 10_000, "backoff.maxDelayMs"),
  };
  const jsonMode = options.jsonMode ?? "schema";
  if (!["schema", "tool", "json-object", "prompt"].includes(jsonMode)) {
    throw new InvalidConfigError(`Unknown jsonMode "${jsonMode}"`);
  }
  if (jsonMode === "tool" && provider !== "anthropic") {
    throw new InvalidConfigError(`jsonMode "tool" is for anthropic; ${provider} has "schema"`);
  }
  if (provider === "openai-compatible" && !options.baseURL) {
    throw new InvalidConfigError(
      'provider "openai-compatible" needs a baseURL, such as http://localhost:11434/v1',
    );
  }
  const apiKey = resolveKey(options, provider);
  const common = { model, timeoutMs, baseURL: options.baseURL };
  let call: ProviderCall;
  switch (provider) {
    case "anthropic":
      call = createAnthropicCall({ ...common, apiKey: required(apiKey, provider) });
      break;
    case "google":
      call = createGoogleCall({ ...common, apiKey: required(apiKey, provider) });
      break;
    case "openai":
      call = createOpenAICall({
        ...common,
        apiKey: required(apiKey, provider),
        maxTokensField: "max_completion_tokens",
      });
      break;
    case "xai":
      call = createOpenAICall({
        ...common,
        baseURL: options.baseURL ?? xaiBaseURL,
        apiKey: required(apiKey, provider),
        maxTokensField: "max_tokens",
      });
      break;
    case "openai-compatible":
      // Local servers often need no key; the SDK insists on one, so a placeholder goes out.
      call = createOpenAICall({
        ...common,
        apiKey: apiKey ?? "none",
        maxTokensField: "max_tokens",
      });
      break;
  }
  const onWarning = options.onWarning ?? emitModelWarning;
  const warned = new Set<string>();
  call = routeSdkWarnings(call, (message) => {
    if (warned.has(message)) return;
    warned.add(message);
    const deprecated = /deprecat|end-of-life/i.test(message);
    try {
      onWarning({ provider, modelId: model, message, deprecated });
    } catch {
      // A host's throwing listener must not fail the call it was told about.
    }
  });
  return new ProviderModel({
    provider,
    modelId: model,
    call,
    apiKey,
    timeoutMs,
    maxRetries,
    backoff,
    jsonMode,
    maxOutputTokens,
    pricing: options.pricing ?? createPricing(options.prices ? { prices: options.prices } : {}),
  });
}

function resolveKey(options: CreateModelOptions, provider: Provider): string | undefined {
  if (options.apiKey) return options.apiKey;
  const env = options.env ?? process.env;
  for (const name of keyVariables[provider]) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

function required(apiKey: string | undefined, provider: Provider): string {
  if (apiKey) return apiKey;
  throw new InvalidConfigError(
    `No API key for ${provider}: pass apiKey or set ${keyVariables[provider].join(" or ")}`,
  );
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) {
    throw new InvalidConfigError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function nonNegativeInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw new InvalidConfigError(`${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}
