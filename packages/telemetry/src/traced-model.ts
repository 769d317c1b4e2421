import type { Context, Span, Tracer } from "@opentelemetry/api";
import {
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  TaskLedgerError,
  type Usage,
} from "@taskledger/core";
import { usageAttributes } from "./attributes.js";
import type { OtelApi } from "./otel-api.js";

/** Where a call made in `active` belongs: a run's planning or replanning span, or `active` itself. */
export type ChatParent = (active: Context) => Context;

/**
 * `model` with a `chat {model}` span around each call (GenAI client span: provider, model,
 * usage, finish reason, cost); prompts and answers only when `captureContent` is on.
 */
export function tracedModel(
  api: OtelApi,
  tracer: () => Tracer | undefined,
  model: LanguageModel,
  captureContent: boolean,
  parentOf: ChatParent,
): LanguageModel {
  return {
    provider: model.provider,
    modelId: model.modelId,
    async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
      const current = tracer();
      if (!current) return model.generate(request);
      const parent = parentOf(api.context.active());
      const span = current.startSpan(
        `chat ${model.modelId}`,
        {
          kind: api.SpanKind.CLIENT,
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.modelId,
            ...(request.maxOutputTokens
              ? { "gen_ai.request.max_tokens": request.maxOutputTokens }
              : {}),
            ...(request.output
              ? { "gen_ai.output.type": "json", "taskledger.output.name": request.output.name }
              : { "gen_ai.output.type": "text" }),
          },
        },
        parent,
      );
      if (captureContent && span.isRecording()) {
        if (request.system) span.setAttribute("gen_ai.system_instructions", request.system);
        span.setAttribute(
          "gen_ai.input.messages",
          JSON.stringify(
            request.messages.map((m) => ({
              role: m.role,
              parts: [{ type: "text", content: m.content }],
            })),
          ),
        );
      }
      try {
        const result = await api.context.with(api.trace.setSpan(parent, span), () =>
          model.generate(request),
        );
        span.setAttributes({
          ...usageAttributes(result.usage),
          "gen_ai.response.finish_reasons": [result.finishReason],
        });
        if (captureContent && span.isRecording()) {
          span.setAttribute(
            "gen_ai.output.messages",
            JSON.stringify([
              {
                role: "assistant",
                parts: [{ type: "text", content: result.text }],
                finish_reason: result.finishReason,
              },
            ]),
          );
        }
        return result;
      } catch (error) {
        recordError(api, span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  };
}

function recordError(api: OtelApi, span: Span, error: unknown): void {
  const code = TaskLedgerError.isInstance(error) ? error.code : "error";
  // A structured answer that did not parse was still paid for: its usage counts.
  const usage = (error as { usage?: Usage } | undefined)?.usage;
  if (usage) span.setAttributes(usageAttributes(usage));
  span.setAttribute("error.type", code);
  span.setStatus({
    code: api.SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}
