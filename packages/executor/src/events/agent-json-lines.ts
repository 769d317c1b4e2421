import type { OpencodeEvent } from "./agent-events.js";
import { JsonLineSplitter } from "./json-line-splitter.js";

/** Turns an agent's JSON object lines into transcript events; it may keep state across lines. */
export interface AgentLineTranslator {
  /** The events one parsed line stands for (none, one, or several). */
  line(value: Record<string, unknown>): OpencodeEvent[];
  /** Events still owed when the stream ends (a step left open). */
  end(): OpencodeEvent[];
}

/**
 * Reads an agent's JSON-lines stdout with bounded memory: a line too long to hold or not a JSON
 * object is counted as an `unknown` event, never parsed whole.
 */
export async function* translateJsonLines(
  source: AsyncIterable<Buffer | string>,
  maxLineBytes: number,
  translator: AgentLineTranslator,
): AsyncGenerator<OpencodeEvent> {
  const splitter = new JsonLineSplitter(maxLineBytes);
  const lineEvents = (text: string, bytes: number, oversize: boolean): OpencodeEvent[] => {
    if (oversize) return [{ type: "unknown", rawType: "oversize", bytes }];
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return [{ type: "unknown", rawType: "invalid-json", bytes }];
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return [{ type: "unknown", rawType: "invalid-json", bytes }];
    }
    return translator.line(value as Record<string, unknown>);
  };
  for await (const chunk of source) {
    for (const line of splitter.push(chunk))
      yield* lineEvents(line.text, line.bytes, line.oversize);
  }
  const last = splitter.end();
  if (last) yield* lineEvents(last.text, last.bytes, last.oversize);
  yield* translator.end();
}
