// The event vocabulary every agent's output is read into: the events of opencode's
// `run --format json`, typed (`OpencodeEvent`, named after the agent it was first written for).
// The Claude Code and Codex translators and the opencode server's session produce the same
// events, and an attempt's transcript is built from them. Also the parser of opencode's stream.
import { emptyUsage, type Usage } from "@taskledger/core";
import { retryAfterMsOf } from "../agent/retry-after.js";
import { clip, stringify } from "./clip.js";
import { count, isObject, type Json } from "./json-fields.js";
import { JsonLineSplitter, type SplitLine } from "./json-line-splitter.js";

/**
 * One event of `opencode run --format json`, typed. Each is also a core `AgentEvent`; the extra
 * fields (`sessionId`, `costUsd`, `filePath`, `error`) feed the transcript.
 */
export type OpencodeEvent =
  | { type: "step-start"; sessionId?: string }
  | { type: "text"; text: string; sessionId?: string }
  | {
      type: "tool-use";
      tool: string;
      status: string;
      input: string;
      output: string;
      /** The tool's error message when its status is `error`. */
      error?: string;
      /** The file a write/edit/patch tool touched, as the agent gave it. */
      filePath?: string;
    }
  /** A tool call began, before its `tool-use` (which comes when it ends): what a live view shows. */
  | { type: "tool-started"; tool: string; input: string }
  | { type: "step-finish"; reason: string; usage: Usage }
  | {
      type: "error";
      message: string;
      statusCode?: number;
      name?: string;
      /** The provider's own error code or type (`insufficient_quota`, `overloaded_error`). */
      errorType?: string;
      /** The provider's `Retry-After`, in milliseconds, when the agent passed its headers on. */
      retryAfterMs?: number;
    }
  /** Any other event type (or a line that is not JSON, as `invalid-json`), kept rather than dropped. */
  | { type: "unknown"; rawType: string; bytes?: number };

export interface EventParseLimits {
  /** Longest line held in memory; the rest of a longer line is counted, not kept. */
  maxLineBytes: number;
  /** Longest tool input or output kept on an event. */
  maxToolIOChars: number;
  /** Longest text kept on one text event. */
  maxTextChars: number;
}

export const defaultEventParseLimits: EventParseLimits = {
  maxLineBytes: 1024 * 1024,
  maxToolIOChars: 2000,
  maxTextChars: 32_000,
};

/** Parses opencode's JSON event stream as it arrives, one typed event per line. */
export async function* parseOpencodeEvents(
  source: AsyncIterable<Buffer | string>,
  limits: Partial<EventParseLimits> = {},
): AsyncGenerator<OpencodeEvent> {
  const merged = { ...defaultEventParseLimits, ...limits };
  const splitter = new JsonLineSplitter(merged.maxLineBytes);
  for await (const chunk of source) {
    for (const line of splitter.push(chunk)) yield parseEventLine(line, merged);
  }
  const last = splitter.end();
  if (last) yield parseEventLine(last, merged);
}

/** Turns one line into an event; never throws. */
export function parseEventLine(
  line: SplitLine,
  limits: EventParseLimits = defaultEventParseLimits,
): OpencodeEvent {
  if (line.oversize) return oversizeEvent(line, limits);
  let value: unknown;
  try {
    value = JSON.parse(line.text);
  } catch {
    return { type: "unknown", rawType: "invalid-json", bytes: line.bytes };
  }
  return (
    eventFromJson(value, limits) ?? { type: "unknown", rawType: "invalid-json", bytes: line.bytes }
  );
}

/**
 * Turns one event object of `opencode run --format json` (as parsed, or as the server executor
 * builds it from the server's own events) into a typed event; undefined when it has no type.
 */
export function eventFromJson(
  value: unknown,
  limits: EventParseLimits = defaultEventParseLimits,
): OpencodeEvent | undefined {
  if (!isObject(value) || typeof value.type !== "string") return undefined;
  const part = isObject(value.part) ? value.part : {};
  const sessionId = typeof value.sessionID === "string" ? value.sessionID : undefined;
  switch (value.type) {
    case "step_start":
      return sessionId ? { type: "step-start", sessionId } : { type: "step-start" };
    case "text": {
      const text = clip(stringify(part.text), limits.maxTextChars);
      return sessionId ? { type: "text", text, sessionId } : { type: "text", text };
    }
    case "tool_use":
      return toolEvent(part, limits);
    case "step_finish":
      return {
        type: "step-finish",
        reason: typeof part.reason === "string" ? part.reason : "unknown",
        usage: usageOf(part),
      };
    case "error":
      return errorEvent(value.error);
    default:
      return { type: "unknown", rawType: value.type.slice(0, 100) };
  }
}

function toolEvent(part: Json, limits: EventParseLimits): OpencodeEvent {
  const state = isObject(part.state) ? part.state : {};
  const input = isObject(state.input) ? state.input : undefined;
  const status = typeof state.status === "string" ? state.status : "unknown";
  const event: OpencodeEvent = {
    type: "tool-use",
    tool: typeof part.tool === "string" ? part.tool : "unknown",
    status,
    input: clip(stringify(state.input), limits.maxToolIOChars),
    output: clip(stringify(state.output), limits.maxToolIOChars),
  };
  if (state.error !== undefined) event.error = clip(stringify(state.error), limits.maxToolIOChars);
  const filePath = input?.filePath ?? input?.file_path ?? input?.path;
  if (typeof filePath === "string") event.filePath = filePath;
  return event;
}

function errorEvent(error: unknown): OpencodeEvent {
  const body = isObject(error) ? error : {};
  const data = isObject(body.data) ? body.data : {};
  const message = stringify(data.message ?? body.message ?? error) || "opencode reported an error";
  const event: OpencodeEvent = { type: "error", message: clip(message, 4000) };
  if (typeof data.statusCode === "number") event.statusCode = data.statusCode;
  if (typeof body.name === "string") event.name = body.name;
  // opencode's APIError carries the provider's response: its error code and its Retry-After.
  const errorType = providerErrorType(data.responseBody);
  if (errorType !== undefined) event.errorType = errorType;
  const retryAfterMs = isObject(data.responseHeaders)
    ? retryAfterMsOf(data.responseHeaders)
    : undefined;
  if (retryAfterMs !== undefined) event.retryAfterMs = retryAfterMs;
  return event;
}

/** `error.code`, else `error.type`, of a provider's JSON error body (OpenAI's, Anthropic's). */
function providerErrorType(body: unknown): string | undefined {
  if (typeof body !== "string" || body.length > 100_000) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const error = isObject(parsed) && isObject(parsed.error) ? parsed.error : {};
  const named = [error.code, error.type].find((v) => typeof v === "string" && v !== "");
  return typeof named === "string" ? named.slice(0, 100) : undefined;
}

function usageOf(part: Json): Usage {
  const usage = emptyUsage();
  const tokens = isObject(part.tokens) ? part.tokens : {};
  const cache = isObject(tokens.cache) ? tokens.cache : {};
  usage.inputTokens = count(tokens.input);
  usage.outputTokens = count(tokens.output) + count(tokens.reasoning);
  usage.cacheReadTokens = count(cache.read);
  usage.cacheWriteTokens = count(cache.write);
  if (typeof part.cost === "number" && Number.isFinite(part.cost) && part.cost >= 0) {
    usage.costUsd = part.cost;
  }
  return usage;
}

// A line too long to hold: its type and tool name are read from the part that was kept.
function oversizeEvent(line: SplitLine, limits: EventParseLimits): OpencodeEvent {
  const rawType = /"type"\s*:\s*"([a-z_]{1,40})"/.exec(line.text)?.[1] ?? "oversize";
  const note = `[event of ${line.bytes} bytes, too large to keep]`;
  if (rawType === "tool_use") {
    const tool = /"tool"\s*:\s*"([^"]{1,100})"/.exec(line.text)?.[1] ?? "unknown";
    const status = /"status"\s*:\s*"([a-z]{1,20})"/.exec(line.text)?.[1] ?? "unknown";
    return { type: "tool-use", tool, status, input: note, output: note };
  }
  if (rawType === "text") return { type: "text", text: clip(note, limits.maxTextChars) };
  return { type: "unknown", rawType, bytes: line.bytes };
}
