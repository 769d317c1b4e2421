import { emptyUsage, type Usage } from "@taskledger/core";
import {
  defaultEventParseLimits,
  type EventParseLimits,
  type OpencodeEvent,
} from "../events/agent-events.js";
import type { AgentLineTranslator } from "../events/agent-json-lines.js";
import { clip, stringify } from "../events/clip.js";
import { count, isObject, type Json } from "../events/json-fields.js";

const finishReasons: Record<string, string> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool-calls",
  refusal: "content-filter",
  pause_turn: "other",
};

/**
 * Reads `claude -p --output-format stream-json --verbose --include-partial-messages`: a model step
 * is one streamed message (`message_start` … `message_stop`, which carry its usage and stop
 * reason), text and tool calls come from the `assistant` lines, tool results from the `user`
 * lines, and the closing `result` line says whether the session failed and what it cost.
 */
export class ClaudeCodeTranslator implements AgentLineTranslator {
  private sessionId: string | undefined;
  private stepUsage: Usage = emptyUsage();
  private stopReason: string | undefined;
  private inStep = false;
  /** A step that ended in tool calls, finished once their results are in (Claude runs some after). */
  private pendingFinish: OpencodeEvent | undefined;
  private readonly tools = new Map<string, { name: string; input: unknown }>();
  /** What Claude Code says the session cost (`total_cost_usd`), once its result line came. */
  costUsd: number | undefined;

  constructor(private readonly limits: EventParseLimits = defaultEventParseLimits) {}

  line(value: Json): OpencodeEvent[] {
    if (typeof value.session_id === "string") this.sessionId ??= value.session_id;
    const starts = isObject(value.event) && value.event.type === "message_start";
    if (this.pendingFinish && (starts || value.type === "result")) {
      return [...this.flush(), ...this.line(value)];
    }
    switch (value.type) {
      case "stream_event":
        return this.streamEvent(isObject(value.event) ? value.event : {});
      case "assistant":
        // A subagent's messages carry its parent's tool id; only the main agent's steps count.
        return value.parent_tool_use_id ? [] : this.assistant(value);
      case "user":
        return value.parent_tool_use_id ? [] : this.toolResults(value);
      case "result":
        return this.result(value);
      case "system":
        return this.system(value);
      default:
        return [{ type: "unknown", rawType: clip(stringify(value.type), 60) || "untyped" }];
    }
  }

  /** A retry of a refused key or login is an error already: the executor ends the attempt on it. */
  private system(value: Json): OpencodeEvent[] {
    const status = value.error_status;
    if (value.subtype === "api_retry" && (status === 401 || status === 403)) {
      const said = clip(stringify(value.error), 400) || "refused";
      return [
        { type: "error", message: `the model API answered ${status}: ${said}`, statusCode: status },
      ];
    }
    return [{ type: "unknown", rawType: `system/${clip(stringify(value.subtype), 60)}` }];
  }

  end(): OpencodeEvent[] {
    // A step the process never finished (killed mid-stream) has no finish reason.
    return [...this.flush(), ...(this.inStep ? [this.finishStep("unknown")] : [])];
  }

  private flush(): OpencodeEvent[] {
    const pending = this.pendingFinish;
    this.pendingFinish = undefined;
    return pending ? [pending] : [];
  }

  private streamEvent(event: Json): OpencodeEvent[] {
    switch (event.type) {
      case "message_start": {
        const message = isObject(event.message) ? event.message : {};
        const usage = isObject(message.usage) ? message.usage : {};
        this.stepUsage = {
          ...emptyUsage(),
          inputTokens: count(usage.input_tokens),
          cacheReadTokens: count(usage.cache_read_input_tokens),
          cacheWriteTokens: count(usage.cache_creation_input_tokens),
        };
        this.stopReason = undefined;
        this.inStep = true;
        return [
          this.sessionId
            ? { type: "step-start", sessionId: this.sessionId }
            : { type: "step-start" },
        ];
      }
      case "message_delta": {
        const delta = isObject(event.delta) ? event.delta : {};
        const usage = isObject(event.usage) ? event.usage : {};
        if (typeof delta.stop_reason === "string") this.stopReason = delta.stop_reason;
        this.stepUsage.outputTokens = count(usage.output_tokens);
        return [];
      }
      case "message_stop": {
        if (!this.inStep) return [];
        const finish = this.finishStep(
          finishReasons[this.stopReason ?? ""] ?? this.stopReason ?? "unknown",
        );
        if (this.stopReason !== "tool_use") return [finish];
        this.pendingFinish = finish;
        return [];
      }
      default:
        return [];
    }
  }

  private finishStep(reason: string): OpencodeEvent {
    this.inStep = false;
    return { type: "step-finish", reason, usage: this.stepUsage };
  }

  private assistant(value: Json): OpencodeEvent[] {
    const message = isObject(value.message) ? value.message : {};
    const content = Array.isArray(message.content) ? message.content : [];
    const events: OpencodeEvent[] = [];
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block.type === "text" && typeof block.text === "string") {
        const text = clip(block.text, this.limits.maxTextChars);
        events.push(
          this.sessionId
            ? { type: "text", text, sessionId: this.sessionId }
            : { type: "text", text },
        );
      } else if (block.type === "tool_use" && typeof block.id === "string") {
        const name = stringify(block.name) || "unknown";
        // Bounded: a call is forgotten once its result comes, and a runaway agent is capped.
        if (this.tools.size < 1000) this.tools.set(block.id, { name, input: block.input });
        // Claude Code runs the call once its message ends: a live view shows it until the result.
        events.push({
          type: "tool-started",
          tool: name.toLowerCase(),
          input: clip(stringify(block.input), this.limits.maxToolIOChars),
        });
      }
    }
    return events;
  }

  private toolResults(value: Json): OpencodeEvent[] {
    const message = isObject(value.message) ? value.message : {};
    const content = Array.isArray(message.content) ? message.content : [];
    const events: OpencodeEvent[] = [];
    for (const block of content) {
      if (!isObject(block) || block.type !== "tool_result") continue;
      const id = stringify(block.tool_use_id);
      const call = this.tools.get(id);
      this.tools.delete(id);
      const output = clip(resultText(block.content), this.limits.maxToolIOChars);
      const failed = block.is_error === true;
      // Claude Code's tool names (`Write`, `Edit`, `Bash`) in opencode's spelling, for one digest.
      const tool = (call?.name ?? "unknown").toLowerCase();
      const event: OpencodeEvent = {
        type: "tool-use",
        tool,
        status: failed ? "error" : "completed",
        input: clip(stringify(call?.input), this.limits.maxToolIOChars),
        output: failed ? "" : output,
      };
      if (failed) {
        // With nobody to ask (`--permission-prompts none`), a denied call says it needed permission.
        event.error = /permission/i.test(output) ? `permission denied: ${output}` : output;
      }
      const input = isObject(call?.input) ? call.input : {};
      const filePath = input.file_path ?? input.notebook_path;
      if (typeof filePath === "string") event.filePath = filePath;
      events.push(event);
    }
    return events;
  }

  private result(value: Json): OpencodeEvent[] {
    if (typeof value.total_cost_usd === "number" && value.total_cost_usd >= 0) {
      this.costUsd = value.total_cost_usd;
    }
    const events = this.end();
    const failed =
      value.is_error === true || (value.subtype !== undefined && value.subtype !== "success");
    // Output that ran out is the last step's `length` finish, not an error of its own.
    if (!failed || value.api_error === "max_output_tokens") return events;
    const errors = Array.isArray(value.errors) ? value.errors.map(stringify).join("; ") : "";
    const message =
      stringify(value.result) || errors || `Claude Code ended with ${stringify(value.subtype)}`;
    const event: OpencodeEvent = { type: "error", message: clip(message, 4000) };
    if (typeof value.api_error_status === "number") event.statusCode = value.api_error_status;
    // The provider's error type as Claude Code read it (`overloaded_error`, `insufficient_quota`).
    if (typeof value.api_error_type === "string" && value.api_error_type !== "")
      event.errorType = value.api_error_type.slice(0, 100);
    events.push(event);
    return events;
  }
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return stringify(content);
  return content
    .map((part) => (isObject(part) && typeof part.text === "string" ? part.text : stringify(part)))
    .join("\n");
}
