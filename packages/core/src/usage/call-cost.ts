import { totalTokens, type Usage } from "./usage.js";

/** US dollars per million tokens. Cache prices default to the input price when left out. */
export interface ModelPrice {
  inputPerMillion: number;
  outputPerMillion: number;
  cacheReadPerMillion?: number;
  cacheWritePerMillion?: number;
}

/** Prices by model id, as `provider/model` or the bare model id. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** One model call (or agent step) to price. */
export interface PricedCall {
  provider: string;
  model: string;
  usage: Usage;
}

/**
 * The cost of a call in US dollars, or `undefined` when the model's price is unknown. A host's
 * own function, or `@taskledger/llm`'s `createPricing` (a dated price table plus overrides).
 */
export type Pricing = (call: PricedCall) => number | undefined;

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

/** The price `table` gives `provider/model` (or the bare `model`), if any. */
export function priceIn(
  table: PriceTable,
  provider: string,
  model: string,
): ModelPrice | undefined {
  return table[`${provider}/${model}`] ?? table[model];
}

/**
 * `usage` with its cost: `costUsd` when `cost` is known, otherwise the model named in
 * `unpricedModels` (never a cost of 0 that would read as free). A call with no tokens costs 0.
 */
export function withCost(
  usage: Usage,
  call: { provider: string; model: string },
  cost: number | undefined,
): Usage {
  const { costUsd: _cost, unpricedModels: _unpriced, ...tokens } = usage;
  if (cost !== undefined && Number.isFinite(cost) && cost >= 0) return { ...tokens, costUsd: cost };
  if (totalTokens(usage) === 0) return { ...tokens, costUsd: 0 };
  return { ...tokens, unpricedModels: [`${call.provider}/${call.model}`] };
}

/** Prices one call with `pricing`; a throwing or absent pricing leaves the cost unknown. */
export function priceCall(pricing: Pricing | undefined, call: PricedCall): Usage {
  let cost: number | undefined;
  try {
    cost = pricing?.(call);
  } catch {
    cost = undefined;
  }
  return withCost(call.usage, call, cost);
}
