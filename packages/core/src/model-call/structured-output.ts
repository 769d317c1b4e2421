import type { z } from "zod";
import { StructuredOutputError } from "../errors/errors.js";

const fence = /^\s*```(?:json|JSON)?\s*\n?([\s\S]*?)\n?\s*```\s*$/;

/**
 * Parses a model's JSON answer and validates it. A markdown fence around the JSON is tolerated;
 * anything else that is not valid JSON matching the schema is a `StructuredOutputError` whose
 * message can be shown to the model in a repair call.
 */
export function parseStructuredOutput<T>(text: string, schema: z.ZodType<T>): T {
  const body = fence.exec(text)?.[1] ?? text;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (cause) {
    throw new StructuredOutputError(`The answer is not valid JSON: ${(cause as Error).message}`, {
      text,
      cause,
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 20)
      .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
      .join("; ");
    throw new StructuredOutputError(`The answer does not match the schema: ${issues}`, {
      text,
      cause: parsed.error,
    });
  }
  return parsed.data;
}
