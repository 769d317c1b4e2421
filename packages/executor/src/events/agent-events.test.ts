import { Readable } from "node:stream";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { Transcript } from "../agent/transcript.js";
import { type OpencodeEvent, parseOpencodeEvents } from "./agent-events.js";

// Recorded from `opencode run --format json` 1.18.33 against the scripted model server (ids kept,
// long fields shortened).
const recorded = [
  '{"type":"step_start","timestamp":1795317342036,"sessionID":"ses_1","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_1","type":"step-start"}}',
  '{"type":"tool_use","timestamp":1795317342040,"sessionID":"ses_1","part":{"id":"prt_2","messageID":"msg_1","sessionID":"ses_1","type":"tool","callID":"call_1","tool":"write","state":{"status":"completed","input":{"filePath":"/work/dir/hello.txt","content":"hi"},"output":"Wrote file successfully.","title":"hello.txt","metadata":{}}}}',
  '{"type":"step_finish","timestamp":1795317342041,"sessionID":"ses_1","part":{"id":"prt_3","reason":"tool-calls","messageID":"msg_1","sessionID":"ses_1","type":"step-finish","tokens":{"total":120,"input":100,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}',
  '{"type":"step_start","timestamp":1795317342050,"sessionID":"ses_1","part":{"id":"prt_4","messageID":"msg_2","sessionID":"ses_1","type":"step-start"}}',
  '{"type":"text","timestamp":1795317342060,"sessionID":"ses_1","part":{"id":"prt_5","messageID":"msg_2","sessionID":"ses_1","type":"text","text":"Wrote hello.txt.","time":{"start":1,"end":2}}}',
  '{"type":"reasoning","timestamp":1795317342061,"sessionID":"ses_1","part":{"type":"reasoning","text":"…"}}',
  '{"type":"step_finish","timestamp":1795317342062,"sessionID":"ses_1","part":{"id":"prt_6","reason":"stop","messageID":"msg_2","sessionID":"ses_1","type":"step-finish","tokens":{"total":130,"input":120,"output":6,"reasoning":4,"cache":{"write":1,"read":2}},"cost":0.25}}',
  '{"type":"error","timestamp":1795317342063,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Rate limited","statusCode":429,"isRetryable":true}}}',
  "not json at all",
].join("\n");

async function collect(source: AsyncIterable<Buffer | string>): Promise<OpencodeEvent[]> {
  const events: OpencodeEvent[] = [];
  for await (const event of parseOpencodeEvents(source)) events.push(event);
  return events;
}

function chunked(text: string, size: number): Readable {
  const buffer = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < buffer.length; i += size) chunks.push(buffer.subarray(i, i + size));
  return Readable.from(chunks);
}

describe("parseOpencodeEvents", () => {
  it("types a recorded stream, however it is split into chunks", async () => {
    const whole = await collect(chunked(recorded, 1 << 20));
    expect(whole).toEqual([
      { type: "step-start", sessionId: "ses_1" },
      {
        type: "tool-use",
        tool: "write",
        status: "completed",
        input: '{"filePath":"/work/dir/hello.txt","content":"hi"}',
        output: "Wrote file successfully.",
        filePath: "/work/dir/hello.txt",
      },
      {
        type: "step-finish",
        reason: "tool-calls",
        usage: {
          inputTokens: 100,
          outputTokens: 20,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          costUsd: 0,
        },
      },
      { type: "step-start", sessionId: "ses_1" },
      { type: "text", text: "Wrote hello.txt.", sessionId: "ses_1" },
      { type: "unknown", rawType: "reasoning" },
      {
        type: "step-finish",
        reason: "stop",
        usage: {
          inputTokens: 120,
          outputTokens: 10,
          cacheReadTokens: 2,
          cacheWriteTokens: 1,
          costUsd: 0.25,
        },
      },
      { type: "error", message: "Rate limited", statusCode: 429, name: "APIError" },
      { type: "unknown", rawType: "invalid-json", bytes: 15 },
    ]);
    // Byte by byte (splitting multi-byte characters too) gives the same events.
    expect(await collect(chunked(recorded, 1))).toEqual(whole);
    expect(await collect(chunked(`${recorded.replaceAll("\n", "\r\n")}\n`, 7))).toEqual(whole);
  });

  it("feeds a transcript: final text, tool calls, finish reasons, usage, files", async () => {
    const transcript = new Transcript("/work/dir");
    for await (const event of parseOpencodeEvents(chunked(recorded, 64))) transcript.add(event);
    expect(transcript.finalText).toBe("Wrote hello.txt.");
    expect(transcript.stepFinishReasons).toEqual(["tool-calls", "stop"]);
    expect(transcript.filesChanged).toEqual(["hello.txt"]);
    expect(transcript.usage).toEqual({
      inputTokens: 220,
      outputTokens: 30,
      cacheReadTokens: 2,
      cacheWriteTokens: 1,
      costUsd: 0.25,
    });
    expect(transcript.errors).toEqual([{ message: "Rate limited", statusCode: 429 }]);
    expect(transcript.unknownEvents).toBe(2);
  });

  it("keeps only the head of an oversize line and still names its tool", async () => {
    const output = "x".repeat(5 * 1024 * 1024);
    const line = JSON.stringify({
      type: "tool_use",
      part: { type: "tool", tool: "bash", state: { status: "completed", input: {}, output } },
    });
    const events = await collect(chunked(`${line}\n`, 65_536));
    expect(events).toEqual([
      {
        type: "tool-use",
        tool: "bash",
        status: "completed",
        input: `[event of ${line.length} bytes, too large to keep]`,
        output: `[event of ${line.length} bytes, too large to keep]`,
      },
    ]);
  });

  it("trims a tool output that fits in a line to the configured size", async () => {
    const line = JSON.stringify({
      type: "tool_use",
      part: {
        tool: "read",
        state: { status: "completed", input: { filePath: "a" }, output: "y".repeat(50_000) },
      },
    });
    const [event] = await collect(chunked(line, 4096));
    expect(event?.type).toBe("tool-use");
    const output = event?.type === "tool-use" ? event.output : "";
    expect(output.length).toBeLessThanOrEqual(2000);
    expect(output).toContain("characters cut");
  });

  it("parses a 100 MB stream of a million-line run with bounded memory", async () => {
    const bigOutput = "o".repeat(64 * 1024);
    const toolLine = `${JSON.stringify({ type: "tool_use", part: { tool: "bash", state: { status: "completed", input: { command: "cat big" }, output: bigOutput } } })}\n`;
    const textLine = '{"type":"text","part":{"text":"still working on it"}}\n';
    const stepLines =
      '{"type":"step_start","part":{}}\n{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":10,"output":1}}}\n';
    const hugeLine = `${JSON.stringify({ type: "tool_use", part: { tool: "bash", state: { status: "completed", output: "h".repeat(20 * 1024 * 1024) } } })}\n`;
    const targetBytes = 100 * 1024 * 1024;
    let produced = 0;
    let lines = 0;
    let toolLines = 0;
    // A generator, so the 100 MB never exist at once on the producing side either.
    async function* stream(): AsyncGenerator<string> {
      yield hugeLine;
      produced += hugeLine.length;
      while (produced < targetBytes || lines < 1_100_000) {
        let chunk = "";
        for (let i = 0; i < 1000; i++) {
          chunk += i === 0 ? toolLine : i % 2 === 0 ? textLine : stepLines;
          if (i === 0) toolLines++;
          lines += i % 2 === 0 ? 1 : 2;
        }
        produced += chunk.length;
        yield chunk;
      }
    }
    const transcript = new Transcript("/work");
    const baseline = memory();
    let peak = baseline;
    let events = 0;
    for await (const event of parseOpencodeEvents(stream())) {
      transcript.add(event);
      if (++events % 100_000 === 0) peak = Math.max(peak, memory());
    }
    expect(produced).toBeGreaterThanOrEqual(targetBytes);
    expect(events).toBe(lines + 1);
    expect(lines).toBeGreaterThan(1_000_000);
    expect(transcript.toolCallCount).toBe(toolLines + 1);
    expect(transcript.toolCalls).toHaveLength(200);
    expect(transcript.stepFinishReasons).toHaveLength(1000);
    // What the parser and transcript hold stays far below what went through them.
    expect(peak - baseline).toBeLessThan(16 * 1024 * 1024);
  }, 120_000);
});

// A full collection before each sample, so what is measured is what is held, not garbage.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

function memory(): number {
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}
