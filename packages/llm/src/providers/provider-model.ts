import { setTimeout as sleep } from "node:timers/promises";
import {
  AbortedError,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  type Pricing,
  parseStructuredOutput,
  priceCall,
  StructuredOutputError,
} from "@taskledger/core";
import type { z } from "zod";
import { structuredSystemPrompt } from "./json-prompt.js";
import { toProviderJsonSchema } from "./json-schema.js";
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
  pricing: Pricing | undefined;
}

/**
 * A `LanguageModel` over one provider call: a timeout per attempt, retries with backoff on
 * retryable failures, zod validation of structured answers (the repair call is the caller's), usage
 * and cost.
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
        usage: this.#priced(answer.usage),
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
    // Validated here, repaired by the caller (core's `callStructured`): one owner of the retry.
    const answer = await this.#callWithRetries(
      { ...base, messages: request.messages },
      request.abortSignal,
    );
    const usage = this.#priced(answer.usage);
    const parsed = parseAnswer(answer, output.schema, this.provider);
    if (!parsed.ok) {
      throw new StructuredOutputError(parsed.error.message, {
        text: answer.text,
        cause: parsed.error.cause,
        usage,
        finishReason: answer.finishReason,
      });
    }
    return { text: answer.text, object: parsed.value, usage, finishReason: answer.finishReason };
  }

  #priced(usage: ProviderResponse["usage"]) {
    const { provider, modelId, pricing } = this.#config;
    return priceCall(pricing, { provider, model: modelId, usage });
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
