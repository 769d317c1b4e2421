import { afterEach, describe, expect, it } from "vitest";
import { createModelServer, type ModelServer } from "./model-server.js";
import { insufficientQuotaError, overloadedError } from "./provider-errors.js";

let server: ModelServer;
afterEach(async () => {
  await server?.close();
});

const post = (path: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read loosely in assertions
type Loose = any;
const json = async (response: Response): Promise<Loose> => response.json();

/** Parses an SSE body into its `data:` payloads (and `event:` names when present). */
async function sse(response: Response): Promise<{ event?: string; data: string }[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((frame) => {
      const lines = frame.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
      const data = lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "";
      return event ? { event, data } : { data };
    });
}

describe("createModelServer", () => {
  it("answers OpenAI chat completions as JSON with usage and records the request", async () => {
    server = await createModelServer({
      replies: [{ text: "hello", usage: { inputTokens: 7, outputTokens: 2, cacheReadTokens: 3 } }],
    });
    const response = await post("/v1/chat/completions", {
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
    });
    const body = await json(response);
    expect(body.choices[0]).toMatchObject({
      message: { role: "assistant", content: "hello" },
      finish_reason: "stop",
    });
    expect(body.usage).toMatchObject({
      prompt_tokens: 10,
      completion_tokens: 2,
      prompt_tokens_details: { cached_tokens: 3 },
    });
    expect(server.requests[0]).toMatchObject({ face: "openai", model: "m1", stream: false });
  });

  it("streams OpenAI tool calls, the finish reason and a usage chunk", async () => {
    server = await createModelServer({
      replies: [
        {
          toolCalls: [
            { name: "write", arguments: { filePath: "a.txt", content: "x".repeat(100) } },
          ],
        },
      ],
    });
    const frames = await sse(
      await post("/v1/chat/completions", {
        model: "m",
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(frames.at(-1)?.data).toBe("[DONE]");
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
    const args = chunks
      .flatMap((c) => c.choices[0]?.delta?.tool_calls ?? [])
      .map((t: { function: { arguments: string } }) => t.function.arguments)
      .join("");
    expect(JSON.parse(args)).toMatchObject({ filePath: "a.txt" });
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe(
      "tool_calls",
    );
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { completion_tokens: expect.any(Number) },
    });
  });

  it("speaks the OpenAI Responses API, JSON and stream, as Codex reads it", async () => {
    server = await createModelServer({
      replies: [
        { text: "hello", usage: { inputTokens: 7, outputTokens: 2, cacheReadTokens: 3 } },
        { text: "Let me look.", toolCalls: [{ name: "exec_command", arguments: { cmd: "ls" } }] },
        { text: "cut", finishReason: "length" },
      ],
    });
    const body = await json(await post("/v1/responses", { model: "m1", input: "hi" }));
    expect(body).toMatchObject({
      object: "response",
      status: "completed",
      output: [{ type: "message", content: [{ type: "output_text", text: "hello" }] }],
      usage: { input_tokens: 10, output_tokens: 2, input_tokens_details: { cached_tokens: 3 } },
    });
    expect(server.requests[0]).toMatchObject({ face: "responses", model: "m1", stream: false });

    const frames = await sse(await post("/v1/responses", { model: "m", stream: true, input: [] }));
    const events = frames.map((f) => ({ name: f.event, data: JSON.parse(f.data) }));
    // Every frame names its type twice (SSE `event:` and `type`) and counts up.
    expect(events.every((e, i) => e.name === e.data.type && e.data.sequence_number === i)).toBe(
      true,
    );
    expect(events.at(0)?.name).toBe("response.created");
    const text = events
      .filter((e) => e.name === "response.output_text.delta")
      .map((e) => e.data.delta)
      .join("");
    expect(text).toBe("Let me look.");
    const args = events
      .filter((e) => e.name === "response.function_call_arguments.delta")
      .map((e) => e.data.delta)
      .join("");
    expect(JSON.parse(args)).toEqual({ cmd: "ls" });
    const done = events
      .filter((e) => e.name === "response.output_item.done")
      .map((e) => e.data.item);
    expect(done).toMatchObject([
      { type: "message", status: "completed" },
      { type: "function_call", name: "exec_command", call_id: "call_2_0", status: "completed" },
    ]);
    expect(events.at(-1)).toMatchObject({
      name: "response.completed",
      data: { response: { status: "completed", usage: { output_tokens: expect.any(Number) } } },
    });

    const cut = await sse(await post("/v1/responses", { model: "m", stream: true, input: [] }));
    expect(JSON.parse(cut.at(-1)?.data ?? "{}")).toMatchObject({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } },
    });
  });

  it("speaks Anthropic messages, JSON and stream", async () => {
    server = await createModelServer({
      replies: [
        { text: "cut", finishReason: "length" },
        { text: "streamed text", usage: { outputTokens: 4 } },
      ],
    });
    const body = await json(await post("/v1/messages", { model: "claude", max_tokens: 5 }));
    expect(body).toMatchObject({
      type: "message",
      content: [{ type: "text", text: "cut" }],
      stop_reason: "max_tokens",
    });
    const frames = await sse(await post("/v1/messages", { model: "claude", stream: true }));
    expect(frames.map((f) => f.event)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(JSON.parse(frames[4]!.data)).toMatchObject({
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 4 },
    });
  });

  it("speaks Gemini generateContent and streamGenerateContent", async () => {
    server = await createModelServer({ replies: [{ text: '{"a":1}' }, { text: "x".repeat(100) }] });
    const body = await json(
      await post("/v1beta/models/gemini-x:generateContent", { contents: [] }),
    );
    expect(body.candidates[0]).toMatchObject({
      content: { parts: [{ text: '{"a":1}' }] },
      finishReason: "STOP",
    });
    expect(body.usageMetadata.candidatesTokenCount).toBeGreaterThan(0);
    expect(server.requests[0]).toMatchObject({ face: "google", model: "gemini-x", stream: false });
    const frames = await sse(
      await post("/v1beta/models/gemini-x:streamGenerateContent?alt=sse", { contents: [] }),
    );
    const text = frames
      .map((f) =>
        JSON.parse(f.data)
          .candidates[0].content.parts.map((p: { text?: string }) => p.text ?? "")
          .join(""),
      )
      .join("");
    expect(text).toBe("x".repeat(100));
    expect(server.requests[1]?.stream).toBe(true);
  });

  it("injects HTTP errors in each provider's shape, with headers", async () => {
    server = await createModelServer({
      replies: [{ status: 429, headers: { "retry-after": "0" } }, { status: 401 }, { status: 500 }],
    });
    const limited = await post("/v1/chat/completions", {});
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("0");
    expect((await json(limited)).error.type).toBe("rate_limit_exceeded");
    expect(await json(await post("/v1/messages", {}))).toMatchObject({
      type: "error",
      error: { type: "authentication_error" },
    });
    expect(await json(await post("/v1beta/models/g:generateContent", {}))).toMatchObject({
      error: { code: 500, status: "INTERNAL" },
    });
  });

  it("sends a provider's quota and overload errors as the provider does", async () => {
    server = await createModelServer({
      replies: [insufficientQuotaError({ "retry-after-ms": "10" }), overloadedError()],
    });
    const quota = await post("/v1/chat/completions", {});
    expect(quota.status).toBe(429);
    expect(quota.headers.get("retry-after-ms")).toBe("10");
    expect((await json(quota)).error).toMatchObject({
      type: "insufficient_quota",
      code: "insufficient_quota",
    });
    const overloaded = await post("/v1/messages", {});
    expect(overloaded.status).toBe(529);
    expect(await json(overloaded)).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
  });

  it("sends raw bodies, hangs until the client aborts, and drops streams mid-way", async () => {
    server = await createModelServer({
      replies: [
        { rawBody: '{"choices": [' },
        { hang: true },
        { text: "a".repeat(200), disconnectAfterChunks: 3 },
      ],
    });
    expect(await (await post("/v1/chat/completions", {})).text()).toBe('{"choices": [');
    const controller = new AbortController();
    const hanging = post("/v1/chat/completions", {}, controller.signal);
    setTimeout(() => controller.abort(), 20);
    await expect(hanging).rejects.toThrow();
    const dropped = await post("/v1/chat/completions", { stream: true });
    await expect(dropped.text()).rejects.toThrow();
  });

  it("answers an unexpected request with a 500 and counts it", async () => {
    server = await createModelServer();
    const response = await post("/v1/chat/completions", {});
    expect(response.status).toBe(500);
    expect(server.unexpected).toBe(1);
  });

  it("answers from a function of the request", async () => {
    server = await createModelServer({
      replies: (request) => ({ text: `you asked for ${request.model}` }),
    });
    const body = await json(await post("/v1/chat/completions", { model: "abc" }));
    expect(body.choices[0].message.content).toBe("you asked for abc");
    expect(server.unexpected).toBe(0);
  });
});
