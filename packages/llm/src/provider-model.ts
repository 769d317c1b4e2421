import { setTimeout as sleep } from "node:timers/promises";
import {
  AbortedError,
  addUsage,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  type ModelMessage,
  parseStructuredOutput,
  StructuredOutputError,
} from "@taskledger/core";
import type { z } from "zod";
import { repairPrompt, structuredSystemPrompt } from "./json-prompt.js";
import { toProviderJsonSchema } from "./json-schema.js";
import { type ModelPrice, withCost } from "./price.js";
import type { JsonMode, ProviderCall, ProviderRequest, ProviderResponse } from "./provider-call.js";
import { retryAfterMs, toModelError } from "./provider-error.js";

export interface Backoff {
  /** Wait before the first retry; doubled for each further one, with jitter. Default 500. */
  initialDelayMs?: number;
  /** Longest wait, also the cap on a provider's `retry-after`. Default 10,000. */
  maxDelayMs?: number;
}

export interface ProviderModelConfig {
  provider: string;
  modelId: string;
  call: ProviderCall;
  /** Only to mask it in messages; never sent anywhere by this class. */
  apiKey: string | undefined;
  timeoutMs: number;
  maxRetries: number;
  backoff: Required<Backoff>;
  jsonMode: JsonMode;
  maxOutputTokens: number;
  price: ModelPrice | undefined;
}

/**
 * A `LanguageModel` over one provider call: a timeout per attempt, retries with backoff on
 * retryable failures, zod validation of structured answers with one repair call, usage and cost.
 */
export class ProviderModel implements LanguageModel {
  readonly provider: string;
  readonly modelId: string;
  readonly #config: ProviderModelConfig;

  constructor(config: ProviderModelConfig) {
    this.provider = config.provider;
    this.modelId = config.modelId;
    this.#config = config;
  }

  async generate<T = undefined>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
    const config = this.#config;
    const output = request.output;
    const maxOutputTokens = request.maxOutputTokens ?? config.maxOutputTokens;
    if (!output) {
      const answer = await this.#callWithRetries(
        { system: request.system, messages: request.messages, output: undefined, maxOutputTokens },
        request.abortSignal,
      );
      return {
        text: answer.text,
        object: undefined,
        usage: withCost(answer.usage, config.price),
        finishReason: answer.finishReason,
      };
    }

    const jsonSchema = toProviderJsonSchema(output.schema);
    const base = {
      system: structuredSystemPrompt(
        request.system,
        { name: output.name, schema: jsonSchema.schema },
        config.jsonMode,
      ),
      output: {
        name: output.name,
        description: output.description,
        jsonSchema,
        mode: config.jsonMode,
      },
      maxOutputTokens,
    };
    const first = await this.#callWithRetries(
      { ...base, messages: request.messages },
      request.abortSignal,
    );
    const firstParsed = parseAnswer(first, output.schema, this.provider);
    if (firstParsed.ok) {
      return {
        text: first.text,
        object: firstParsed.value,
        usage: withCost(first.usage, config.price),
        finishReason: first.finishReason,
      };
    }
    if (first.finishReason === "length") {
      throw new StructuredOutputError(firstParsed.error.message, {
        text: first.text,
        cause: firstParsed.error.cause,
        usage: withCost(first.usage, config.price),
      });
    }

    // One repair call that shows the model its answer and the validation error.
    const repairMessages: ModelMessage[] = [
      ...request.messages,
      { role: "assistant", content: first.text },
      { role: "user", content: repairPrompt(firstParsed.error.message) },
    ];
    const second = await this.#callWithRetries(
      { ...base, messages: repairMessages },
      request.abortSignal,
    );
    const usage = withCost(addUsage(first.usage, second.usage), config.price);
    const secondParsed = parseAnswer(second, output.schema, this.provider);
    if (!secondParsed.ok) {
      throw new StructuredOutputError(
        `${this.provider} answer for "${output.name}" was still invalid after one repair call: ${secondParsed.error.message}`,
        { text: second.text, cause: secondParsed.error, usage },
      );
    }
    return {
      text: second.text,
      object: secondParsed.value,
      usage,
      finishReason: second.finishReason,
    };
  }

  async #callWithRetries(
    request: Omit<ProviderRequest, "signal">,
    abortSignal: AbortSignal | undefined,
  ): Promise<ProviderResponse> {
    const { provider, apiKey, timeoutMs, maxRetries, backoff } = this.#config;
    for (let attempt = 0; ; attempt++) {
      if (abortSignal?.aborted) throw new AbortedError(`The ${provider} call was aborted`);
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const signal = abortSignal ? AbortSignal.any([abortSignal, timeout.signal]) : timeout.signal;
      let failure: unknown;
      try {
        return await this.#config.call({ ...request, signal });
      } catch (error) {
        const mapped = toModelError(error, {
          provider,
          apiKey,
          abortSignal,
          timeoutSignal: timeout.signal,
          timeoutMs,
        });
        if (!mapped.isRetryable || attempt >= maxRetries) {
          throw mapped;
        }
        failure = error;
      } finally {
        clearTimeout(timer);
      }
      await backoffDelay(attempt, retryAfterMs(failure), backoff, abortSignal, provider);
    }
  }
}

type Parsed<T> = { ok: true; value: T } | { ok: false; error: StructuredOutputError };

function parseAnswer<T>(
  answer: ProviderResponse,
  schema: z.ZodType<T>,
  provider: string,
): Parsed<T> {
  if (answer.finishReason === "length") {
    // A cut-off answer is never repaired: the same limit would cut the repair too.
    return {
      ok: false,
      error: new StructuredOutputError(
        `${provider} stopped at the output token limit (finish reason "length") before the JSON was complete; raise maxOutputTokens`,
        { text: answer.text },
      ),
    };
  }
  try {
    return { ok: true, value: parseStructuredOutput(answer.text, schema) };
  } catch (error) {
    if (StructuredOutputError.isInstance(error)) return { ok: false, error };
    throw error;
  }
}

async function backoffDelay(
  attempt: number,
  retryAfter: number | undefined,
  backoff: Required<Backoff>,
  abortSignal: AbortSignal | undefined,
  provider: string,
): Promise<void> {
  const exponential = Math.min(backoff.maxDelayMs, backoff.initialDelayMs * 2 ** attempt);
  const jittered = exponential * (0.5 + Math.random() / 2);
  const ms = Math.min(backoff.maxDelayMs, Math.max(jittered, retryAfter ?? 0));
  try {
    await sleep(ms, undefined, abortSignal ? { signal: abortSignal } : undefined);
  } catch {
    throw new AbortedError(`The ${provider} call was aborted`);
  }
}
