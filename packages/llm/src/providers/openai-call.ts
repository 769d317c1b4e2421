import type { FinishReason } from "@taskledger/core";
import type OpenAI from "openai";
import { lazyClient, type ProviderCall, type ProviderRequest } from "./provider-call.js";

export interface OpenAICallOptions {
  apiKey: string;
  baseURL: string | undefined;
  model: string;
  timeoutMs: number;
  /** OpenAI takes `max_completion_tokens`; xAI and most compatible servers take `max_tokens`. */
  maxTokensField: "max_completion_tokens" | "max_tokens";
}

/** Chat Completions through the openai SDK: OpenAI, xAI and any OpenAI-compatible server. */
export function createOpenAICall(options: OpenAICallOptions): ProviderCall {
  // The SDK is loaded by the first call, not when the package is imported (import cost).
  const client = lazyClient(async () => {
    const { default: Client } = await import("openai");
    return new Client({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      timeout: options.timeoutMs,
      // Retries belong to the model client, the same for every provider.
      maxRetries: 0,
    });
  });
  const call: ProviderCall = async (request) => {
    const completion = await (client.get() ?? (await client.load())).chat.completions.create(
      {
        model: options.model,
        messages: [
          ...(request.system ? [{ role: "system" as const, content: request.system }] : []),
          ...request.messages.map((m) => ({ role: m.role, content: m.content })),
        ],
        [options.maxTokensField]: request.maxOutputTokens,
        ...responseFormat(request),
      },
      { signal: request.signal, maxRetries: 0 },
    );
    const choice = completion.choices?.[0];
    const cached = completion.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    return {
      text: choice?.message?.content ?? choice?.message?.refusal ?? "",
      usage: {
        inputTokens: Math.max(0, (completion.usage?.prompt_tokens ?? 0) - cached),
        outputTokens: completion.usage?.completion_tokens ?? 0,
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      finishReason: choice ? finishReason(choice.finish_reason) : "error",
    };
  };
  call.ready = async () => {
    await client.load();
  };
  return call;
}

function responseFormat(
  request: ProviderRequest,
): Pick<OpenAI.ChatCompletionCreateParamsNonStreaming, "response_format"> {
  const output = request.output;
  if (!output || output.mode === "prompt") return {};
  if (output.mode === "json-object") return { response_format: { type: "json_object" } };
  return {
    response_format: {
      type: "json_schema",
      json_schema: {
        name: output.name,
        ...(output.description ? { description: output.description } : {}),
        schema: output.jsonSchema.schema,
        strict: output.jsonSchema.strict,
      },
    },
  };
}

function finishReason(reason: string | null | undefined): FinishReason {
  switch (reason) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    case "content_filter":
      return "content-filter";
    default:
      return "other";
  }
}
