// How each provider spells a completion on the wire: OpenAI chat completions, the OpenAI
// Responses API, Anthropic messages and Gemini generateContent, as JSON bodies and as
// server-sent event streams.

export type Face = "openai" | "responses" | "anthropic" | "google";

export type ScriptedFinishReason = "stop" | "length" | "tool-calls" | "content-filter";

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** An object (sent as JSON) or the arguments text exactly as the model would stream it. */
  arguments: unknown;
}

export interface ScriptedUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A completion, described once and rendered in whichever provider's format was asked for. */
export interface Completion {
  id: string;
  model: string;
  text: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: ScriptedFinishReason;
  usage: Required<ScriptedUsage>;
}

export interface FaceRenderer {
  json(completion: Completion): unknown;
  /** Server-sent event frames, each complete with its trailing blank line. */
  events(completion: Completion, options: { includeUsage: boolean }): string[];
  errorBody(status: number, message: string): unknown;
}

const created = () => Math.floor(Date.now() / 1000);

/** Splits text into stream-sized pieces, so clients see many deltas as they would live. */
export function pieces(text: string, size = 16): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const data = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const event = (name: string, payload: unknown) =>
  `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;

const openaiFinish: Record<ScriptedFinishReason, string> = {
  stop: "stop",
  length: "length",
  "tool-calls": "tool_calls",
  "content-filter": "content_filter",
};

const openai: FaceRenderer = {
  json(c) {
    return {
      id: c.id,
      object: "chat.completion",
      created: created(),
      model: c.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: c.text === "" && c.toolCalls.length > 0 ? null : c.text,
            refusal: null,
            ...(c.toolCalls.length > 0
              ? {
                  tool_calls: c.toolCalls.map((t) => ({
                    id: t.id,
                    type: "function",
                    function: { name: t.name, arguments: t.arguments },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: openaiFinish[c.finishReason],
        },
      ],
      usage: openaiUsage(c),
    };
  },
  events(c, { includeUsage }) {
    const chunk = (delta: unknown, finish: string | null = null) =>
      data({
        id: c.id,
        object: "chat.completion.chunk",
        created: created(),
        model: c.model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      });
    const frames = [chunk({ role: "assistant", content: "" })];
    for (const piece of pieces(c.text)) frames.push(chunk({ content: piece }));
    c.toolCalls.forEach((t, index) => {
      frames.push(
        chunk({
          tool_calls: [
            { index, id: t.id, type: "function", function: { name: t.name, arguments: "" } },
          ],
        }),
      );
      for (const piece of pieces(t.arguments, 32)) {
        frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    frames.push(chunk({}, openaiFinish[c.finishReason]));
    if (includeUsage) {
      frames.push(
        data({
          id: c.id,
          object: "chat.completion.chunk",
          created: created(),
          model: c.model,
          choices: [],
          usage: openaiUsage(c),
        }),
      );
    }
    frames.push("data: [DONE]\n\n");
    return frames;
  },
  errorBody(status, message) {
    const type =
      status === 429
        ? "rate_limit_exceeded"
        : status === 401
          ? "invalid_api_key"
          : status >= 500
            ? "server_error"
            : "invalid_request_error";
    return { error: { message, type, param: null, code: type } };
  },
};

function openaiUsage(c: Completion) {
  return {
    prompt_tokens: c.usage.inputTokens + c.usage.cacheReadTokens,
    completion_tokens: c.usage.outputTokens,
    total_tokens: c.usage.inputTokens + c.usage.cacheReadTokens + c.usage.outputTokens,
    prompt_tokens_details: { cached_tokens: c.usage.cacheReadTokens },
  };
}

/** The Responses API (`POST /v1/responses`), which Codex speaks. */
const responses: FaceRenderer = {
  json(c) {
    return responseObject(
      c,
      responseOutput(c),
      c.finishReason === "length" ? "incomplete" : "completed",
    );
  },
  events(c) {
    let sequence = 0;
    const frame = (type: string, payload: Record<string, unknown>) =>
      event(type, { type, sequence_number: sequence++, ...payload });
    const frames = [
      frame("response.created", { response: responseObject(c, [], "in_progress") }),
      frame("response.in_progress", { response: responseObject(c, [], "in_progress") }),
    ];
    const output = responseOutput(c);
    output.forEach((item, index) => {
      const base = { output_index: index };
      if (item.type === "message") {
        frames.push(
          frame("response.output_item.added", {
            ...base,
            item: { ...item, status: "in_progress", content: [] },
          }),
          frame("response.content_part.added", {
            ...base,
            item_id: item.id,
            content_index: 0,
            part: { type: "output_text", text: "", annotations: [] },
          }),
        );
        for (const piece of pieces(c.text)) {
          frames.push(
            frame("response.output_text.delta", {
              ...base,
              item_id: item.id,
              content_index: 0,
              delta: piece,
              logprobs: [],
            }),
          );
        }
        frames.push(
          frame("response.output_text.done", {
            ...base,
            item_id: item.id,
            content_index: 0,
            text: c.text,
            logprobs: [],
          }),
          frame("response.content_part.done", {
            ...base,
            item_id: item.id,
            content_index: 0,
            part: { type: "output_text", text: c.text, annotations: [] },
          }),
        );
      } else {
        frames.push(
          frame("response.output_item.added", {
            ...base,
            item: { ...item, status: "in_progress", arguments: "" },
          }),
        );
        for (const piece of pieces(String(item.arguments), 32)) {
          frames.push(
            frame("response.function_call_arguments.delta", {
              ...base,
              item_id: item.id,
              delta: piece,
            }),
          );
        }
        frames.push(
          frame("response.function_call_arguments.done", {
            ...base,
            item_id: item.id,
            arguments: item.arguments,
          }),
        );
      }
      frames.push(frame("response.output_item.done", { ...base, item }));
    });
    const status = c.finishReason === "length" ? "incomplete" : "completed";
    frames.push(frame(`response.${status}`, { response: responseObject(c, output, status) }));
    return frames;
  },
  errorBody: (status, message) => openai.errorBody(status, message),
};

type ResponseItem = { type: "message" | "function_call"; id: string } & Record<string, unknown>;

function responseOutput(c: Completion): ResponseItem[] {
  const items: ResponseItem[] = [];
  if (c.text) {
    items.push({
      type: "message",
      id: `msg_${c.id}`,
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: c.text, annotations: [] }],
    });
  }
  for (const t of c.toolCalls) {
    items.push({
      type: "function_call",
      id: `fc_${t.id}`,
      call_id: t.id,
      name: t.name,
      arguments: t.arguments,
      status: "completed",
    });
  }
  return items;
}

function responseObject(c: Completion, output: ResponseItem[], status: string) {
  const done = status !== "in_progress";
  return {
    id: `resp_${c.id}`,
    object: "response",
    created_at: created(),
    status,
    model: c.model,
    output,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    error: null,
    usage: done
      ? {
          input_tokens: c.usage.inputTokens + c.usage.cacheReadTokens,
          input_tokens_details: { cached_tokens: c.usage.cacheReadTokens },
          output_tokens: c.usage.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: c.usage.inputTokens + c.usage.cacheReadTokens + c.usage.outputTokens,
        }
      : null,
  };
}

const anthropicStop: Record<ScriptedFinishReason, string> = {
  stop: "end_turn",
  length: "max_tokens",
  "tool-calls": "tool_use",
  "content-filter": "refusal",
};

const anthropicErrorType = (status: number): string =>
  ({
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  })[status] ?? "api_error";

const anthropic: FaceRenderer = {
  json(c) {
    return {
      id: c.id,
      type: "message",
      role: "assistant",
      model: c.model,
      content: [
        ...(c.text ? [{ type: "text", text: c.text }] : []),
        ...c.toolCalls.map((t) => ({
          type: "tool_use",
          id: t.id,
          name: t.name,
          input: parseArguments(t.arguments),
        })),
      ],
      stop_reason: anthropicStop[c.finishReason],
      stop_sequence: null,
      usage: anthropicUsage(c),
    };
  },
  events(c) {
    const usage = anthropicUsage(c);
    const frames = [
      event("message_start", {
        type: "message_start",
        message: {
          id: c.id,
          type: "message",
          role: "assistant",
          model: c.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      }),
    ];
    let index = 0;
    if (c.text) {
      frames.push(
        event("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        }),
      );
      for (const piece of pieces(c.text)) {
        frames.push(
          event("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: piece },
          }),
        );
      }
      frames.push(event("content_block_stop", { type: "content_block_stop", index }));
      index++;
    }
    for (const t of c.toolCalls) {
      frames.push(
        event("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: t.id, name: t.name, input: {} },
        }),
      );
      for (const piece of pieces(t.arguments, 32)) {
        frames.push(
          event("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: piece },
          }),
        );
      }
      frames.push(event("content_block_stop", { type: "content_block_stop", index }));
      index++;
    }
    frames.push(
      event("message_delta", {
        type: "message_delta",
        delta: { stop_reason: anthropicStop[c.finishReason], stop_sequence: null },
        usage: { output_tokens: c.usage.outputTokens },
      }),
      event("message_stop", { type: "message_stop" }),
    );
    return frames;
  },
  errorBody(status, message) {
    return { type: "error", error: { type: anthropicErrorType(status), message } };
  },
};

function anthropicUsage(c: Completion) {
  return {
    input_tokens: c.usage.inputTokens,
    output_tokens: c.usage.outputTokens,
    cache_read_input_tokens: c.usage.cacheReadTokens,
    cache_creation_input_tokens: c.usage.cacheWriteTokens,
  };
}

const googleFinish: Record<ScriptedFinishReason, string> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  "tool-calls": "STOP",
  "content-filter": "SAFETY",
};

const googleStatus = (status: number): string =>
  ({
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
  })[status] ?? "UNKNOWN";

const google: FaceRenderer = {
  json(c) {
    return googleResponse(
      c,
      [
        ...(c.text ? [{ text: c.text }] : []),
        ...c.toolCalls.map((t) => ({
          functionCall: { name: t.name, args: parseArguments(t.arguments) },
        })),
      ],
      true,
    );
  },
  events(c) {
    const texts = pieces(c.text, 64);
    const frames = texts.map((text) => data(googleResponse(c, [{ text }], false)));
    const calls = c.toolCalls.map((t) => ({
      functionCall: { name: t.name, args: parseArguments(t.arguments) },
    }));
    frames.push(data(googleResponse(c, calls, true)));
    return frames;
  },
  errorBody(status, message) {
    return { error: { code: status, message, status: googleStatus(status) } };
  },
};

function googleResponse(c: Completion, parts: unknown[], last: boolean) {
  return {
    candidates: [
      {
        content: { role: "model", parts },
        ...(last ? { finishReason: googleFinish[c.finishReason] } : {}),
        index: 0,
      },
    ],
    ...(last
      ? {
          usageMetadata: {
            promptTokenCount: c.usage.inputTokens + c.usage.cacheReadTokens,
            candidatesTokenCount: c.usage.outputTokens,
            totalTokenCount: c.usage.inputTokens + c.usage.cacheReadTokens + c.usage.outputTokens,
            cachedContentTokenCount: c.usage.cacheReadTokens,
          },
        }
      : {}),
    modelVersion: c.model,
    responseId: c.id,
  };
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

export const faces: Record<Face, FaceRenderer> = { openai, responses, anthropic, google };
