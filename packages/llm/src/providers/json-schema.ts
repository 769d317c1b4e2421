import { z } from "zod";

/** A JSON Schema ready for a provider's structured-output feature. */
export interface ProviderJsonSchema {
  schema: Record<string, unknown>;
  /** False when the schema has an optional property or a non-object root: strict mode would reject it. */
  strict: boolean;
}

// Keywords OpenAI strict mode and Anthropic's structured outputs do not accept. They are moved into
// the description, so the model still sees them and zod still enforces them on the answer.
const movedKeywords = [
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
] as const;

const droppedKeywords = new Set(["$schema", "default", "examples", "title", "$id"]);

/**
 * The wire schema of a zod schema: zod 4's output JSON Schema, then made acceptable to OpenAI's
 * strict mode (and with it to Anthropic and Gemini): `oneOf` becomes `anyOf`, `const` becomes a
 * one-value `enum`, `default` and `$schema` go, size and pattern limits move into `description`,
 * and every object gets `additionalProperties: false`.
 */
export function toProviderJsonSchema(schema: z.ZodType): ProviderJsonSchema {
  const json = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  const state = { strict: json.type === "object" };
  return { schema: transform(json, state), strict: state.strict };
}

function transform(
  node: Record<string, unknown>,
  state: { strict: boolean },
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const limits: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (droppedKeywords.has(key)) continue;
    if ((movedKeywords as readonly string[]).includes(key)) {
      limits.push(`${key} ${typeof value === "string" ? value : JSON.stringify(value)}`);
      continue;
    }
    if (key === "oneOf" || key === "anyOf") {
      out.anyOf = (value as Record<string, unknown>[]).map((item) => transform(item, state));
    } else if (key === "allOf" && Array.isArray(value)) {
      out.allOf = (value as Record<string, unknown>[]).map((item) => transform(item, state));
    } else if (key === "const") {
      out.enum = [value];
    } else if (key === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Record<string, unknown>>).map(([name, child]) => [
          name,
          transform(child, state),
        ]),
      );
    } else if (key === "items" && isObject(value)) {
      out.items = transform(value, state);
    } else if ((key === "$defs" || key === "definitions") && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, Record<string, unknown>>).map(([name, child]) => [
          name,
          transform(child, state),
        ]),
      );
    } else if (key === "additionalProperties" && isObject(value)) {
      // A record (`z.record`) has open keys, which strict mode cannot express.
      state.strict = false;
      out.additionalProperties = transform(value, state);
    } else {
      out[key] = value;
    }
  }
  if (out.type === "object" || out.properties !== undefined) {
    const names = Object.keys((out.properties as Record<string, unknown> | undefined) ?? {});
    const required = new Set((out.required as string[] | undefined) ?? []);
    if (names.some((name) => !required.has(name))) state.strict = false;
    if (out.additionalProperties === undefined) out.additionalProperties = false;
  }
  if (limits.length > 0) {
    const described = typeof out.description === "string" ? `${out.description} ` : "";
    out.description = `${described}(${limits.join(", ")})`;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
