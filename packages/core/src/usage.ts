import { z } from "zod";

/** Tokens (and cost, when a price is known) of one or more model calls. */
export const usageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative().default(0),
  cacheWriteTokens: z.number().int().nonnegative().default(0),
  /** US dollars; absent when no price is known for the model. */
  costUsd: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof usageSchema>;

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

/** Sums usages; the cost is known only when at least one part knows it. */
export function addUsage(...parts: readonly (Partial<Usage> | undefined)[]): Usage {
  const sum = emptyUsage();
  let cost: number | undefined;
  for (const part of parts) {
    if (!part) continue;
    sum.inputTokens += part.inputTokens ?? 0;
    sum.outputTokens += part.outputTokens ?? 0;
    sum.cacheReadTokens += part.cacheReadTokens ?? 0;
    sum.cacheWriteTokens += part.cacheWriteTokens ?? 0;
    if (part.costUsd !== undefined) cost = (cost ?? 0) + part.costUsd;
  }
  return cost === undefined ? sum : { ...sum, costUsd: cost };
}

/** Tokens counted against a run's token budget: everything sent and received. */
export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}
