import {
  acceptanceSchemaName,
  type FinishReason,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  parseStructuredOutput,
  UnexpectedCallError,
  type Usage,
} from "@taskledger/core";
import { abortableDelay } from "./abortable-delay.js";

/** One queued answer: an object (sent as its JSON), raw text, an error to throw, or a function. */
export type ScriptedResponse =
  | {
      object: unknown;
      usage?: Partial<Usage>;
      finishReason?: FinishReason;
      delayMs?: number;
    }
  | { text: string; usage?: Partial<Usage>; finishReason?: FinishReason; delayMs?: number }
  | { error: unknown; delayMs?: number }
  | ((request: GenerateRequest<unknown>) => ScriptedResponse | Promise<ScriptedResponse>);

export interface ScriptedModelOptions {
  responses?: ScriptedResponse[];
  /**
   * Answers to the acceptance judge's calls (structured output `request_acceptance`), taken in
   * order and apart from `responses`; with none queued, a call is answered satisfied
   * (`{ satisfied: true, missing: [] }`), so `responses` scripted before that call existed hold.
   */
  acceptance?: ScriptedResponse[];
  provider?: string;
  modelId?: string;
}

const defaultUsage: Usage = {
  inputTokens: 100,
  outputTokens: 50,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
};

/** The acceptance judge's answer when none is queued: the request is met. */
const satisfied: ScriptedResponse = { object: { satisfied: true, missing: [] } };

/**
 * A model that answers from a queue and records every call. A call with nothing queued throws
 * `UnexpectedCallError` rather than inventing an answer, but the acceptance judge's: those come
 * from their own queue (`acceptance`, `pushAcceptance`) and are satisfied when it is empty.
 * Structured answers are parsed and validated like a real provider's, so an invalid object
 * surfaces as `StructuredOutputError`. Every call, the acceptance judge's too, is in `calls`.
 */
export class ScriptedModel implements LanguageModel {
  readonly provider: string;
  readonly modelId: string;
  readonly calls: GenerateRequest<unknown>[] = [];
  private readonly queue: ScriptedResponse[];
  private readonly acceptance: ScriptedResponse[];

  constructor(options: ScriptedModelOptions = {}) {
    this.provider = options.provider ?? "scripted";
    this.modelId = options.modelId ?? "scripted-model";
    this.queue = [...(options.responses ?? [])];
    this.acceptance = [...(options.acceptance ?? [])];
  }

  /** Queues more answers. */
  push(...responses: ScriptedResponse[]): this {
    this.queue.push(...responses);
    return this;
  }

  /** Queues more answers for the acceptance judge's calls. */
  pushAcceptance(...responses: ScriptedResponse[]): this {
    this.acceptance.push(...responses);
    return this;
  }

  /** Answers still queued (not counting the acceptance judge's). */
  get remaining(): number {
    return this.queue.length;
  }

  /** Answers still queued for the acceptance judge. */
  get acceptanceRemaining(): number {
    return this.acceptance.length;
  }

  async generate<T = undefined>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
    // A snapshot: callers may reuse and extend their messages array after the call.
    this.calls.push({ ...request, messages: [...request.messages] } as GenerateRequest<unknown>);
    let response =
      request.output?.name === acceptanceSchemaName
        ? (this.acceptance.shift() ?? satisfied)
        : this.queue.shift();
    if (response === undefined) {
      throw new UnexpectedCallError(
        `ScriptedModel received call #${this.calls.length} but has no response queued` +
          (request.output ? ` (structured output "${request.output.name}")` : ""),
      );
    }
    while (typeof response === "function") {
      response = await response(request as GenerateRequest<unknown>);
    }
    if (response.delayMs) await abortableDelay(response.delayMs, request.abortSignal);
    else request.abortSignal?.throwIfAborted();
    if ("error" in response) throw response.error;
    const text = "text" in response ? response.text : JSON.stringify(response.object);
    const object = request.output ? parseStructuredOutput(text, request.output.schema) : undefined;
    return {
      text,
      object,
      usage: { ...defaultUsage, ...response.usage },
      finishReason: response.finishReason ?? "stop",
    };
  }
}

export function createScriptedModel(options: ScriptedModelOptions = {}): ScriptedModel {
  return new ScriptedModel(options);
}
