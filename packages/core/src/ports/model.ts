import type { z } from "zod";
import type { Usage } from "../usage/usage.js";

/** Normalised across providers; `length` means the output was cut off and is never hidden. */
export type FinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other";

export interface ModelMessage {
  role: "user" | "assistant";
  content: string;
}

/** A zod schema plus the name it goes by on the provider's wire (`task_ledger`, …). */
export interface StructuredOutput<T> {
  name: string;
  description?: string;
  schema: z.ZodType<T>;
}

export interface GenerateRequest<T> {
  system?: string;
  messages: ModelMessage[];
  /** Ask for JSON matching this schema; the result's `object` is then validated against it. */
  output?: StructuredOutput<T>;
  maxOutputTokens?: number;
  abortSignal?: AbortSignal;
}

export interface GenerateResult<T> {
  /** The raw text of the answer (the JSON text for a structured call). */
  text: string;
  /** The validated object for a structured call; `undefined` otherwise. */
  object: T | undefined;
  usage: Usage;
  finishReason: FinishReason;
}

/**
 * The model the manager and the evaluator call. Implemented by `@taskledger/llm` or by the host.
 * A structured call whose answer does not match the schema rejects with `StructuredOutputError`.
 */
export interface LanguageModel {
  readonly provider: string;
  readonly modelId: string;
  generate<T = undefined>(request: GenerateRequest<T>): Promise<GenerateResult<T>>;
}
