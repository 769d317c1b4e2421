import type { Usage } from "@taskledger/core";

/** US dollars per million tokens. Cache prices default to the input price when left out. */
export interface ModelPrice {
  inputPerMillion: number;
  outputPerMillion: number;
  cacheReadPerMillion?: number;
  cacheWritePerMillion?: number;
}

/** Prices by model id; a model missing from it reports tokens only. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** The cost of `usage` at `price`, in US dollars. */
export function costOf(usage: Usage, price: ModelPrice): number {
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  return (
    usage.inputTokens * perToken(price.inputPerMillion) +
    usage.outputTokens * perToken(price.outputPerMillion) +
    usage.cacheReadTokens * perToken(price.cacheReadPerMillion ?? price.inputPerMillion) +
    usage.cacheWriteTokens * perToken(price.cacheWritePerMillion ?? price.inputPerMillion)
  );
}

/** `usage` with `costUsd` when the table knows the model, unchanged otherwise. */
export function withCost(usage: Usage, price: ModelPrice | undefined): Usage {
  return price ? { ...usage, costUsd: costOf(usage, price) } : usage;
}
