import {
  AbortedError,
  isAbortError,
  ModelError,
  PlanValidationError,
  StructuredOutputError,
  TaskLedgerError,
} from "../errors/errors.js";
import type { LanguageModel, ModelMessage, StructuredOutput } from "../ports/model.js";
import { clipMiddle } from "../text/text-clip.js";
import { addUsage, emptyUsage, type Usage, withUnknownCost } from "../usage/usage.js";
import { parseStructuredOutput } from "./structured-output.js";

export interface StructuredCall<T, R> {
  model: LanguageModel;
  system: string;
  prompt: string;
  output: StructuredOutput<T>;
  /**
   * Turns a schema-valid answer into the value to use, or throws `PlanValidationError` (shown to
   * the model in the repair call, like a parse error).
   */
  validate: (answer: T) => R;
  /** The user turn of the repair call, given what was wrong with the answer. */
  repairMessage: (problem: string) => string;
  /** What is asked for, for error messages: "Task Ledger", "judgment". */
  what: string;
  maxOutputTokens?: number;
  abortSignal: AbortSignal;
}

export interface StructuredCallResult<R> {
  value: R;
  /** True when the first answer was unusable and the repair call fixed it. */
  repaired: boolean;
  /** Every call that returned, usable or not. */
  usage: Usage;
  calls: number;
}

/**
 * The one owner of "the model's answer was not usable": a structured call, and at most one repair
 * call that shows the model its answer and what was wrong, so no request costs more than two
 * calls on the wire. Still unusable, it throws `StructuredOutputError` or `PlanValidationError`
 * carrying both calls' usage. A model is expected to validate but not to repair (`@taskledger/llm` does
 * not); a host model that ignores `output` still has its text parsed here.
 */
export async function callStructured<T, R>(
  call: StructuredCall<T, R>,
): Promise<StructuredCallResult<R>> {
  const messages: ModelMessage[] = [{ role: "user", content: call.prompt }];
  let usage = emptyUsage();
  let calls = 0;

  for (;;) {
    if (call.abortSignal.aborted) throw new AbortedError();
    calls++;
    let text = "";
    try {
      const result = await call.model.generate({
        system: call.system,
        messages: [...messages],
        output: call.output,
        maxOutputTokens: call.maxOutputTokens,
        abortSignal: call.abortSignal,
      });
      if (!result || typeof result !== "object" || typeof result.text !== "string") {
        throw notAResult(call.model, result);
      }
      usage = addUsage(
        usage,
        withUnknownCost(result.usage, `${call.model.provider}/${call.model.modelId}`),
      );
      text = result.text;
      const answer = result.object ?? parseStructuredOutput(result.text, call.output.schema);
      return { value: call.validate(answer), repaired: calls > 1, usage, calls };
    } catch (error) {
      if (call.abortSignal.aborted || isAbortError(error)) {
        throw AbortedError.isInstance(error)
          ? error
          : new AbortedError(undefined, { cause: error });
      }
      if (StructuredOutputError.isInstance(error)) {
        usage = addUsage(usage, error.usage);
        text = error.text;
      }
      if (!isRepairable(error)) throw asModelError(call.model, error);
      const cutOff = StructuredOutputError.isInstance(error) && error.finishReason === "length";
      if (calls >= 2 || cutOff) throw unusable(call.what, error, usage, cutOff);
      messages.push(
        { role: "assistant", content: clipMiddle(text || "(empty)", 4000) },
        { role: "user", content: call.repairMessage(clipMiddle(error.message, 3000)) },
      );
    }
  }
}

function isRepairable(error: unknown): error is StructuredOutputError | PlanValidationError {
  return StructuredOutputError.isInstance(error) || PlanValidationError.isInstance(error);
}

/** A host model whose `generate` resolved to something that is not a result. */
export function notAResult(model: LanguageModel, value: unknown): ModelError {
  const what = value === null ? "null" : typeof value;
  return new ModelError({
    provider: model.provider,
    message: `${model.provider}/${model.modelId}: generate() resolved to ${what}, not { text, object, usage, finishReason }`,
  });
}

/**
 * What a host model's `generate` threw, as the run reports it: our own errors as they are, anything
 * else a `ModelError` (code `model-error`) naming the model, the thrown value as `cause`.
 */
function asModelError(model: LanguageModel, error: unknown): unknown {
  if (TaskLedgerError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError({
    provider: model.provider,
    message: `${model.provider}/${model.modelId}: generate() threw: ${message}`,
    cause: error,
  });
}

function unusable(
  what: string,
  error: StructuredOutputError | PlanValidationError,
  usage: Usage,
  cutOff: boolean,
): StructuredOutputError | PlanValidationError {
  const context = cutOff
    ? `The model's ${what} was cut off at the output token limit`
    : `The model's ${what} was still unusable after one repair`;
  if (PlanValidationError.isInstance(error)) {
    return new PlanValidationError(error.issues, { context, cause: error, usage });
  }
  return new StructuredOutputError(`${context}: ${error.message}`, {
    text: error.text,
    cause: error,
    usage,
    finishReason: error.finishReason,
  });
}
