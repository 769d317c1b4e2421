import type { Attributes } from "@opentelemetry/api";
import type { Usage } from "@taskledger/core";

/** The instrumentation scope of every span this package makes. */
export const scopeName = "@taskledger/telemetry";

/** GenAI semantic-convention usage attributes of `usage`, plus its cost when known. */
export function usageAttributes(usage: Usage): Attributes {
  const attributes: Attributes = {
    "gen_ai.usage.input_tokens": usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
    "gen_ai.usage.output_tokens": usage.outputTokens,
    "gen_ai.usage.cache_read.input_tokens": usage.cacheReadTokens,
    "gen_ai.usage.cache_creation.input_tokens": usage.cacheWriteTokens,
  };
  if (usage.costUsd !== undefined) attributes["taskledger.cost.usd"] = usage.costUsd;
  if (usage.unpricedModels?.length)
    attributes["taskledger.cost.unpriced_models"] = usage.unpricedModels;
  return attributes;
}

/** `provider/model` split the way opencode and the CLI write agent models. */
export function splitModel(model: string): { provider: string; model: string } {
  const slash = model.indexOf("/");
  return slash < 0
    ? { provider: "unknown", model }
    : { provider: model.slice(0, slash), model: model.slice(slash + 1) };
}
