import type Anthropic from "@anthropic-ai/sdk";
import type { FinishReason } from "@taskledger/core";
import { lazyClient, type ProviderCall, type ProviderRequest } from "./provider-call.js";

export interface AnthropicCallOptions {
  apiKey: string;
  baseURL: string | undefined;
  model: string;
  timeoutMs: number;
}

/** The Messages API through @anthropic-ai/sdk. */
export function createAnthropicCall(options: AnthropicCallOptions): ProviderCall {
  // The SDK is loaded by the first call, not when the package is imported (import cost).
  const client = lazyClient(async () => {
    const { default: Client } = await import("@anthropic-ai/sdk");
    return new Client({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      // An explicit timeout also stops the SDK refusing large non-streaming `max_tokens`.
      timeout: options.timeoutMs,
      maxRetries: 0,
    });
  });
  const call: ProviderCall = async (request) => {
    const message = await (client.get() ?? (await client.load())).messages.create(
      {
        model: options.model,
        max_tokens: request.maxOutputTokens,
        ...(request.system ? { system: request.system } : {}),
        messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
        ...structured(request),
      },
      { signal: request.signal, maxRetries: 0 },
    );
    const forcedTool = request.output?.mode === "tool" ? request.output.name : undefined;
    const toolUse = forcedTool
      ? message.content.find((block) => block.type === "tool_use" && block.name === forcedTool)
      : undefined;
    const text =
      toolUse && toolUse.type === "tool_use"
        ? JSON.stringify(toolUse.input)
        : message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    const usage = message.usage;
    return {
      text,
      usage: {
        inputTokens: usage?.input_tokens ?? 0,
        outputTokens: usage?.output_tokens ?? 0,
        cacheReadTokens: usage?.cache_read_input_tokens ?? 0,
        cacheWriteTokens: usage?.cache_creation_input_tokens ?? 0,
      },
      // The forced tool's call is the answer, so stopping for it is a normal stop.
      finishReason:
        toolUse && message.stop_reason === "tool_use" ? "stop" : finishReason(message.stop_reason),
    };
  };
  call.ready = async () => {
    await client.load();
  };
  return call;
}

function structured(request: ProviderRequest): Partial<Anthropic.MessageCreateParamsNonStreaming> {
  const output = request.output;
  if (!output || output.mode === "prompt" || output.mode === "json-object") return {};
  if (output.mode === "tool") {
    return {
      tools: [
        {
          name: output.name,
          description: output.description ?? `Give the answer as the ${output.name} object.`,
          input_schema: output.jsonSchema.schema as Anthropic.Tool.InputSchema,
        },
      ],
      tool_choice: { type: "tool", name: output.name },
    };
  }
  return { output_config: { format: { type: "json_schema", schema: output.jsonSchema.schema } } };
}

function finishReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool-calls";
    case "refusal":
      return "content-filter";
    default:
      return "other";
  }
}
