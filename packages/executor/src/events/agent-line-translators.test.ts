import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ClaudeCodeTranslator } from "../claude-code/claude-code-events.js";
import { CodexTranslator } from "../codex/codex-events.js";
import type { OpencodeEvent } from "./agent-events.js";
import { translateJsonLines } from "./agent-json-lines.js";

async function read(lines: unknown[], translator: ClaudeCodeTranslator | CodexTranslator) {
  const text = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
  const events: OpencodeEvent[] = [];
  for await (const event of translateJsonLines(
    Readable.from([Buffer.from(text)]),
    200,
    translator,
  )) {
    events.push(event);
  }
  return events;
}

const stream = (event: object) => ({ type: "stream_event", event, session_id: "s" });

describe("ClaudeCodeTranslator", () => {
  it("finishes a tool step after its results, maps denials and reads a run out of output as length", async () => {
    const translator = new ClaudeCodeTranslator();
    const events = await read(
      [
        stream({ type: "message_start", message: { usage: { input_tokens: 10 } } }),
        stream({
          type: "message_delta",
          delta: { stop_reason: "tool_use" },
          usage: { output_tokens: 3 },
        }),
        stream({ type: "message_stop" }),
        {
          type: "assistant",
          message: {
            content: [
              { type: "tool_use", id: "t1", name: "Bash", input: { command: "rm -rf /x" } },
            ],
          },
        },
        {
          type: "user",
          message: {
            content: [
              {
                type: "tool_result",
                tool_use_id: "t1",
                is_error: true,
                content: "Permission for this tool use was denied.",
              },
            ],
          },
        },
        stream({ type: "message_start", message: { usage: { input_tokens: 12 } } }),
        { type: "assistant", message: { content: [{ type: "text", text: "Half" }] } },
        stream({
          type: "message_delta",
          delta: { stop_reason: "max_tokens" },
          usage: { output_tokens: 9 },
        }),
        stream({ type: "message_stop" }),
        "x".repeat(500),
        { type: "result", is_error: true, api_error: "max_output_tokens", total_cost_usd: 0.25 },
      ],
      translator,
    );
    expect(events.map((e) => e.type)).toEqual([
      "step-start",
      "tool-started",
      "tool-use",
      "step-finish",
      "step-start",
      "text",
      "step-finish",
      "unknown",
    ]);
    // Told as the call's message ends, before its result: what a live view shows meanwhile.
    expect(events[1]).toEqual({
      type: "tool-started",
      tool: "bash",
      input: JSON.stringify({ command: "rm -rf /x" }),
    });
    expect(events[2]).toMatchObject({
      tool: "bash",
      status: "error",
      error: expect.stringMatching(/^permission denied: /),
    });
    expect(events[3]).toMatchObject({
      reason: "tool-calls",
      usage: { inputTokens: 10, outputTokens: 3 },
    });
    expect(events[6]).toMatchObject({ reason: "length", usage: { outputTokens: 9 } });
    // A line past the limit is counted, never parsed whole.
    expect(events[7]).toEqual({ type: "unknown", rawType: "oversize", bytes: 500 });
    expect(translator.costUsd).toBe(0.25);
  });
});

describe("CodexTranslator", () => {
  it("infers a step per tool call, puts the turn's usage on the last, and reads a failed turn", async () => {
    const command = (id: string) => ({
      id,
      type: "command_execution",
      command: "ls",
      aggregated_output: "a.txt",
      exit_code: 0,
      status: "completed",
    });
    const events = await read(
      [
        { type: "thread.started", thread_id: "th" },
        { type: "item.completed", item: { type: "error", message: "no model metadata" } },
        { type: "turn.started" },
        { type: "item.started", item: { ...command("1"), status: "in_progress" } },
        { type: "item.completed", item: command("1") },
        { type: "item.started", item: { ...command("2"), status: "in_progress" } },
        { type: "item.completed", item: { ...command("2"), exit_code: 1, status: "failed" } },
        {
          type: "item.completed",
          item: {
            type: "file_change",
            status: "completed",
            changes: [{ path: "b.txt", kind: "add" }],
          },
        },
        { type: "item.completed", item: { type: "agent_message", text: "Done." } },
        {
          type: "turn.completed",
          usage: { input_tokens: 100, cached_input_tokens: 40, output_tokens: 7 },
        },
      ],
      new CodexTranslator(),
    );
    const shape = events.map((e) =>
      e.type === "step-finish"
        ? `finish:${e.reason}`
        : e.type === "tool-use"
          ? `${e.tool}:${e.status}`
          : e.type,
    );
    expect(shape).toEqual([
      "unknown",
      "step-start",
      "tool-started",
      "bash:completed",
      "finish:tool-calls",
      "step-start",
      "tool-started",
      "bash:error",
      "apply_patch:completed",
      "finish:tool-calls",
      "step-start",
      "text",
      "finish:stop",
    ]);
    expect(events[1]).toEqual({ type: "step-start", sessionId: "th" });
    // Each command is told as it starts, in the terms of its `tool-use`.
    expect(events[2]).toEqual({ type: "tool-started", tool: "bash", input: "ls" });
    // Codex's own `bash -lc '…'` around a command is taken off: the script is what was asked.
    const wrapped = await read(
      [
        { type: "turn.started" },
        {
          type: "item.started",
          item: {
            ...command("3"),
            command: `/bin/bash -lc 'echo '\\''hi'\\'' > a.txt'`,
            status: "in_progress",
          },
        },
      ],
      new CodexTranslator(),
    );
    expect(wrapped.filter((e) => e.type === "tool-started")).toEqual([
      { type: "tool-started", tool: "bash", input: "echo 'hi' > a.txt" },
    ]);
    expect(events.at(-1)).toMatchObject({
      usage: { inputTokens: 60, cacheReadTokens: 40, outputTokens: 7 },
    });
    expect(events[8]).toMatchObject({ filePath: "b.txt" });

    const failed = await read(
      [
        { type: "turn.started" },
        { type: "error", message: "Reconnecting... 1/5" },
        { type: "turn.failed", error: { message: "unexpected status 503" } },
      ],
      new CodexTranslator(),
    );
    expect(failed.filter((e) => e.type !== "unknown")).toEqual([
      { type: "step-start" },
      { type: "step-finish", reason: "error", usage: expect.any(Object) },
      { type: "error", message: "unexpected status 503", statusCode: 503 },
    ]);
  });
});
