import { z } from "zod";
import { ExecutorError } from "../errors/errors.js";
import type { AttemptResult } from "../ports/executor.js";
import { type Usage, usageSchema, withUnknownCost } from "../usage/usage.js";

const strings = z.array(z.string());

/** What `Executor.run` must resolve to; a host's executor is checked against it at the boundary. */
const attemptResultSchema = z.looseObject({
  outcome: z.enum(["finished", "truncated", "error", "timeout", "cancelled", "rate-limited"]),
  finalText: z.string(),
  toolCalls: z.array(
    z.looseObject({
      tool: z.string(),
      status: z.string(),
      input: z.string(),
      output: z.string(),
    }),
  ),
  stepFinishReasons: strings,
  filesChanged: strings,
  usage: usageSchema,
  error: z.string().optional(),
  limit: z
    .looseObject({
      kind: z.enum(["rate-limit", "overloaded", "quota"]),
      provider: z.string().optional(),
      retryAfterMs: z.number().nonnegative().optional(),
      statusCode: z.number().int().optional(),
      message: z.string(),
    })
    .optional(),
  retryable: z.boolean().optional(),
  infrastructureError: z.boolean().optional(),
  durationMs: z.number().nonnegative(),
  details: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The executor's result, checked: a malformed one is an `ExecutorError` naming the field (never a
 * `TypeError` deep in the evaluator), not retryable since the next attempt gets the same code.
 * Tokens with no cost and no unpriced model name `agent` as unpriced: the cost is unknown, not $0.
 */
export function checkAttemptResult(value: unknown, agent: string): AttemptResult {
  const parsed = attemptResultSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join(".") : "(the result)";
    const given = issue?.path.reduce<unknown>(
      (at, key) =>
        at && typeof at === "object" ? (at as Record<PropertyKey, unknown>)[key] : undefined,
      value,
    );
    throw new ExecutorError(
      `The executor's run() resolved to a malformed attempt result: \`${field}\` ${issue?.message ?? "is invalid"} (got ${describeValue(issue?.path.length ? given : value)}).`,
      { isRetryable: false },
    );
  }
  const result = parsed.data as AttemptResult;
  return { ...result, usage: withUnknownCost(result.usage as Usage, agent) };
}

function describeValue(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "object") return "an object";
  return `${typeof value} ${String(value)}`;
}
