import { createRequire } from "node:module";
import type * as GenaiPrices from "@pydantic/genai-prices";
import { costOf, type PriceTable, type Pricing, priceIn } from "@taskledger/core";

export { costOf, type ModelPrice, type PriceTable, type Pricing } from "@taskledger/core";

export interface PricingOptions {
  /** The host's prices (private or new models), by `provider/model` or model id; they win. */
  prices?: PriceTable;
  /** Look models up in the bundled `@pydantic/genai-prices` table too. Default true. */
  table?: boolean;
  /** The time prices are read at (tables are dated). Default: the call's own time. */
  now?: () => Date;
}

// Our provider ids as the price table spells them; an OpenAI-compatible server has no list price.
const tableProvider: Record<string, string | undefined> = {
  anthropic: "anthropic",
  openai: "openai",
  google: "google",
  xai: "x-ai",
};

// The table is read when a price is first looked up, not when the package is imported (import cost).
let loadedTable: typeof GenaiPrices | undefined;
function priceTable(): typeof GenaiPrices {
  loadedTable ??= createRequire(import.meta.url)("@pydantic/genai-prices") as typeof GenaiPrices;
  return loadedTable;
}

/**
 * Prices calls from the host's `prices` first, then from `@pydantic/genai-prices` (a maintained,
 * dated table with cache and long-context prices, read offline from the package). A model in
 * neither is `undefined`: unknown, never free.
 */
export function createPricing(options: PricingOptions = {}): Pricing {
  const { prices = {}, table = true, now = () => new Date() } = options;
  return ({ provider, model, usage }) => {
    const own = priceIn(prices, provider, model);
    if (own) return costOf(usage, own);
    const providerId = tableProvider[provider];
    if (!table || providerId === undefined) return undefined;
    // The table counts cache reads and writes inside the input tokens; ours keeps them apart.
    const result = priceTable().calcPrice(
      {
        input_tokens: usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
        output_tokens: usage.outputTokens,
        cache_read_tokens: usage.cacheReadTokens,
        cache_write_tokens: usage.cacheWriteTokens,
      },
      model,
      { providerId, timestamp: now() },
    );
    return result?.total_price;
  };
}
