import { emptyUsage, type Usage } from "@taskledger/core";
import {
  defaultEventParseLimits,
  type EventParseLimits,
  type OpencodeEvent,
} from "../events/agent-events.js";
import type { AgentLineTranslator } from "../events/agent-json-lines.js";
import { clip, stringify } from "../events/clip.js";
import { count, isObject, type Json } from "../events/json-fields.js";

const toolItems = new Set(["command_execution", "file_change", "mcp_tool_call", "web_search"]);

/**
 * Reads `codex exec --json`. Codex reports items (commands, file changes, messages) and one usage
 * for the whole turn, not model calls, so steps are inferred: each tool call after a finished one,
 * and the first message after tools, starts a new step; the turn's end closes the last one with
 * the turn's usage. A turn that failed because output ran out is a `length` finish.
 */
export class CodexTranslator implements AgentLineTranslator {
  private sessionId: string | undefined;
  private inStep = false;
  private stepHasTools = false;

  constructor(private readonly limits: EventParseLimits = defaultEventParseLimits) {}

  line(value: Json): OpencodeEvent[] {
    const item = isObject(value.item) ? value.item : {};
    switch (value.type) {
      case "thread.started":
        this.sessionId = stringify(value.thread_id) || undefined;
        return [];
      case "turn.started":
        return this.startStep();
      case "item.started": {
        const type = stringify(item.type);
        if (!toolItems.has(type)) return [];
        const events: OpencodeEvent[] = this.stepHasTools
          ? [this.finishStep("tool-calls", emptyUsage()), ...this.startStep()]
          : [];
        const { tool, input } = this.call(type, item);
        events.push({ type: "tool-started", tool, input });
        return events;
      }
      case "item.completed":
        return this.item(item);
      case "turn.completed":
        return this.inStep ? [this.finishStep("stop", usageOf(value.usage))] : [];
      case "turn.failed": {
        const error = isObject(value.error) ? value.error : {};
        const message = clip(stringify(error.message) || "the Codex turn failed", 4000);
        if (/max_output_tokens/.test(message)) return [this.finishStep("length", emptyUsage())];
        const events: OpencodeEvent[] = this.inStep ? [this.finishStep("error", emptyUsage())] : [];
        events.push(errorEvent(message));
        return events;
      }
      case "error":
        // Codex reports each reconnect as an `error`; only `turn.failed` ends the turn.
        return [{ type: "unknown", rawType: "error" }];
      default:
        return [{ type: "unknown", rawType: clip(stringify(value.type), 60) || "untyped" }];
    }
  }

  end(): OpencodeEvent[] {
    return this.inStep ? [this.finishStep("unknown", emptyUsage())] : [];
  }

  private startStep(): OpencodeEvent[] {
    this.inStep = true;
    this.stepHasTools = false;
    return [
      this.sessionId ? { type: "step-start", sessionId: this.sessionId } : { type: "step-start" },
    ];
  }

  private finishStep(reason: string, usage: Usage): OpencodeEvent {
    this.inStep = false;
    return { type: "step-finish", reason, usage };
  }

  private item(item: Json): OpencodeEvent[] {
    const type = stringify(item.type);
    const events: OpencodeEvent[] = [];
    if (type === "agent_message") {
      if (this.stepHasTools)
        events.push(this.finishStep("tool-calls", emptyUsage()), ...this.startStep());
      const text = clip(stringify(item.text), this.limits.maxTextChars);
      events.push(
        this.sessionId ? { type: "text", text, sessionId: this.sessionId } : { type: "text", text },
      );
      return events;
    }
    if (!toolItems.has(type)) {
      // `reasoning`, `todo_list`, and `error` items (warnings such as unknown model metadata).
      return [{ type: "unknown", rawType: `item/${clip(type, 40)}` }];
    }
    if (!this.inStep) events.push(...this.startStep());
    this.stepHasTools = true;
    events.push(...this.toolEvents(type, item));
    return events;
  }

  /** A tool item's name and input in opencode's terms (a command is `bash`). */
  private call(type: string, item: Json): { tool: string; input: string } {
    const max = this.limits.maxToolIOChars;
    if (type === "file_change") {
      return { tool: "apply_patch", input: clip(changesOf(item).map(changeLine).join(", "), max) };
    }
    const tool =
      type === "command_execution"
        ? "bash"
        : type === "mcp_tool_call"
          ? `${stringify(item.server)}.${stringify(item.tool)}`
          : "websearch";
    const input =
      type === "command_execution"
        ? unwrapShell(stringify(item.command))
        : (item.arguments ?? item.query);
    return { tool, input: clip(stringify(input), max) };
  }

  private toolEvents(type: string, item: Json): OpencodeEvent[] {
    const max = this.limits.maxToolIOChars;
    const status = item.status === "completed" ? "completed" : "error";
    if (type === "file_change") {
      return changesOf(item)
        .slice(0, 100)
        .map((change) => {
          const event: OpencodeEvent = {
            type: "tool-use",
            tool: "apply_patch",
            status,
            input: clip(changeLine(change), max),
            output: "",
          };
          if (typeof change.path === "string") event.filePath = change.path;
          if (status === "error") event.error = "the patch was not applied";
          return event;
        });
    }
    const output = clip(stringify(item.aggregated_output ?? item.result), max);
    const event: OpencodeEvent = { type: "tool-use", ...this.call(type, item), status, output };
    if (status === "error") {
      const exit =
        item.exit_code === undefined || item.exit_code === null
          ? ""
          : ` (exit ${stringify(item.exit_code)})`;
      event.error = clip(`${stringify(item.error) || output || "failed"}${exit}`, max);
    }
    return [event];
  }
}

function usageOf(value: unknown): Usage {
  const usage = isObject(value) ? value : {};
  const cached = count(usage.cached_input_tokens);
  return {
    ...emptyUsage(),
    // Codex counts cached tokens inside `input_tokens`.
    inputTokens: Math.max(0, count(usage.input_tokens) - cached),
    outputTokens: count(usage.output_tokens),
    cacheReadTokens: cached,
    cacheWriteTokens: count(usage.cache_write_input_tokens),
  };
}

function errorEvent(message: string): OpencodeEvent {
  const status = /\b(?:status|http)\D{0,3}(\d{3})\b/i.exec(message)?.[1];
  const event: OpencodeEvent = { type: "error", message };
  if (status !== undefined) event.statusCode = Number(status);
  return event;
}

/** A `file_change` item's changes, each `{ kind, path }`. */
function changesOf(item: Json): Json[] {
  return Array.isArray(item.changes) ? item.changes.filter(isObject) : [];
}

/** One change as a call's input: `add src/a.ts`. */
function changeLine(change: Json): string {
  return `${stringify(change.kind)} ${stringify(change.path)}`;
}

/**
 * The script of Codex's `/bin/bash -lc '<script>'` wrapper, which it puts around every command:
 * what the model asked to run, for a live view and a digest. Any other command stays as it is.
 */
function unwrapShell(command: string): string {
  const script = /^(?:\/\S+\/)?(?:bash|sh|zsh) -l?c '((?:[^']|'\\'')*)'$/s.exec(command)?.[1];
  return script === undefined ? command : script.replaceAll("'\\''", "'");
}
