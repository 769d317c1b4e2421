import type { GenerateContentConfig } from "@google/genai";
import type { FinishReason } from "@taskledger/core";
import { lazyClient, type ProviderCall, type ProviderRequest } from "./provider-call.js";

export interface GoogleCallOptions {
  apiKey: string;
  baseURL: string | undefined;
  model: string;
  timeoutMs: number;
}

/** Gemini's generateContent through @google/genai (the Gemini API, not Vertex). */
export function createGoogleCall(options: GoogleCallOptions): ProviderCall {
  // The SDK is loaded by the first call, not when the package is imported (import cost).
  const client = lazyClient(async () => {
    const { GoogleGenAI } = await import("@google/genai");
    return new GoogleGenAI({
      apiKey: options.apiKey,
      httpOptions: {
        ...(options.baseURL ? { baseUrl: options.baseURL } : {}),
        timeout: options.timeoutMs,
        // The SDK retries nothing without retryOptions; the model client retries for it.
      },
    });
  });
  const call: ProviderCall = async (request) => {
    const response = await (client.get() ?? (await client.load())).models.generateContent({
      model: options.model,
      contents: request.messages.map((m) => ({
        role: m.role === "assistant" ? "model" : "user",
        parts: [{ text: m.content }],
      })),
      config: {
        ...(request.system ? { systemInstruction: request.system } : {}),
        maxOutputTokens: request.maxOutputTokens,
        abortSignal: request.signal,
        ...structured(request),
      },
    });
    const candidate = response.candidates?.[0];
    const text = (candidate?.content?.parts ?? [])
      .map((part) => (part.thought ? "" : (part.text ?? "")))
      .join("");
    const meta = response.usageMetadata;
    const cached = meta?.cachedContentTokenCount ?? 0;
    return {
      text,
      usage: {
        inputTokens: Math.max(0, (meta?.promptTokenCount ?? 0) - cached),
        // Thinking tokens are billed as output.
        outputTokens: (meta?.candidatesTokenCount ?? 0) + (meta?.thoughtsTokenCount ?? 0),
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      finishReason: candidate
        ? finishReason(candidate.finishReason)
        : response.promptFeedback?.blockReason
          ? "content-filter"
          : "error",
    };
  };
  call.ready = async () => {
    await client.load();
  };
  return call;
}

function structured(request: ProviderRequest): GenerateContentConfig {
  const output = request.output;
  if (!output || output.mode === "prompt") return {};
  if (output.mode === "json-object") return { responseMimeType: "application/json" };
  return { responseMimeType: "application/json", responseJsonSchema: output.jsonSchema.schema };
}

function finishReason(reason: string | undefined): FinishReason {
  switch (reason) {
    case "STOP":
      return "stop";
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "LANGUAGE":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
    case "IMAGE_PROHIBITED_CONTENT":
      return "content-filter";
    case "MALFORMED_FUNCTION_CALL":
    case "UNEXPECTED_TOOL_CALL":
    case "TOO_MANY_TOOL_CALLS":
      return "error";
    case undefined:
      // Some compatible servers omit it on a complete answer.
      return "stop";
    default:
      return "other";
  }
}
