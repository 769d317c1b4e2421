import { z } from "zod";

/** Tokens (and cost, when a price is known) of one or more model calls. */
export const usageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative().default(0),
  cacheWriteTokens: z.number().int().nonnegative().default(0),
  /**
   * US dollars of the calls whose price is known; absent when none was priced. The whole cost
   * only when `unpricedModels` is absent.
   */
  costUsd: z.number().nonnegative().optional(),
  /** Models (`provider/model`) that spent tokens here at no known price: the cost is unknown. */
  unpricedModels: z.array(z.string()).optional(),
});
export type Usage = z.infer<typeof usageSchema>;

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

/** Sums usages: the costs that are known, and every model whose price is not. */
export function addUsage(...parts: readonly (Partial<Usage> | undefined)[]): Usage {
  const sum = emptyUsage();
  let cost: number | undefined;
  const unpriced = new Set<string>();
  for (const part of parts) {
    if (!part) continue;
    sum.inputTokens += part.inputTokens ?? 0;
    sum.outputTokens += part.outputTokens ?? 0;
    sum.cacheReadTokens += part.cacheReadTokens ?? 0;
    sum.cacheWriteTokens += part.cacheWriteTokens ?? 0;
    if (part.costUsd !== undefined) cost = (cost ?? 0) + part.costUsd;
    for (const model of part.unpricedModels ?? []) unpriced.add(model);
  }
  return {
    ...sum,
    ...(cost === undefined ? {} : { costUsd: cost }),
    ...(unpriced.size > 0 ? { unpricedModels: [...unpriced].sort() } : {}),
  };
}

/** Tokens counted against a run's token budget: everything sent and received. */
export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}

/**
 * `usage` as reported by a part that may not price its calls (a host's model or executor): tokens
 * with neither a cost nor `unpricedModels` name `source` as unpriced, so the cost is unknown, never $0.
 */
export function withUnknownCost(usage: Usage, source: string): Usage {
  if (usage.costUsd !== undefined || usage.unpricedModels?.length || totalTokens(usage) === 0)
    return usage;
  return { ...usage, unpricedModels: [source] };
}

/** The whole cost in US dollars, or `undefined` when some tokens have no known price. */
export function knownCost(usage: Usage): number | undefined {
  if (usage.unpricedModels?.length) return undefined;
  if (usage.costUsd !== undefined) return usage.costUsd;
  return totalTokens(usage) === 0 ? 0 : undefined;
}
