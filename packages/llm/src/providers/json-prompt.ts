import type { JsonMode } from "./provider-call.js";

/**
 * The system prompt of a structured call. Native modes constrain the answer on the wire, so only
 * the JSON-mode and prompt-only fallbacks need the schema spelled out.
 */
export function structuredSystemPrompt(
  system: string | undefined,
  output: { name: string; schema: Record<string, unknown> },
  mode: JsonMode,
): string | undefined {
  if (mode === "schema" || mode === "tool") return system;
  const instruction =
    `Answer with a single JSON object named ${output.name} and nothing else: no prose, no ` +
    `markdown fence. It must match this JSON Schema:\n${JSON.stringify(output.schema)}`;
  return system ? `${system}\n\n${instruction}` : instruction;
}
