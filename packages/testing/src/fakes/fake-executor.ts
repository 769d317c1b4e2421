import {
  type AttemptOutcome,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  isAbortError,
  UnexpectedCallError,
  type Usage,
} from "@taskledger/core";
import { abortableDelay } from "./abortable-delay.js";

/** What one scripted attempt does. */
export type FakeAttempt =
  /** Finishes normally with `text` as the agent's last message. */
  | {
      type: "success";
      text?: string;
      delayMs?: number;
      usage?: Partial<Usage>;
      filesChanged?: string[];
    }
  /** Stops with a `length` finish, or the seed's 2-token stop: cut off before the work was done. */
  | { type: "truncated"; text?: string; delayMs?: number; usage?: Partial<Usage> }
  /** Ends with an error outcome, as a provider or tool failure would. */
  | { type: "error"; error?: string; delayMs?: number; usage?: Partial<Usage> }
  /** The executor itself throws, as if the agent process could not start. */
  | { type: "crash"; message?: string; delayMs?: number }
  /** Never ends on its own; only the abort signal stops it. */
  | { type: "hang" };

export interface FakeExecutorCall {
  subTaskId: string;
  attempt: number;
  prompt: string;
  cwd: string;
  /** Order in which attempts started and ended, counted across all attempts. */
  startTick: number;
  endTick: number | undefined;
  outcome: AttemptOutcome | "crash" | undefined;
}

export interface FakeExecutorOptions {
  /** Attempts per sub-task id, taken in order; or a function of the call. */
  script?:
    | Record<string, FakeAttempt[]>
    | ((call: { subTaskId: string; attempt: number; prompt: string }) => FakeAttempt);
  /** Used when the script has nothing for an attempt; without it such a call throws. */
  fallback?: FakeAttempt;
}

const defaultUsage: Usage = {
  inputTokens: 1000,
  outputTokens: 200,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
};

/**
 * An executor that plays scripted attempts: success, truncation, error, crash, delay, hang. It
 * records every call and how many ran at once, and honours the abort signal.
 */
export class FakeExecutor implements Executor {
  readonly calls: FakeExecutorCall[] = [];
  /** Most attempts that were running at the same moment. */
  maxConcurrent = 0;
  private running = 0;
  private tick = 0;
  private readonly consumed = new Map<string, number>();

  constructor(private readonly options: FakeExecutorOptions = {}) {}

  /** Attempts running right now. */
  get active(): number {
    return this.running;
  }

  async run(prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
    const subTaskId = options.subTask.id;
    const call: FakeExecutorCall = {
      subTaskId,
      attempt: options.attempt,
      prompt,
      cwd: options.cwd,
      startTick: this.tick++,
      endTick: undefined,
      outcome: undefined,
    };
    this.calls.push(call);
    this.running++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running);
    const started = performance.now();
    try {
      const script = this.next(subTaskId, options.attempt, prompt);
      const result = await this.play(script, options);
      call.outcome = result.outcome;
      return { ...result, durationMs: performance.now() - started };
    } catch (error) {
      call.outcome = isAbortError(error) ? "cancelled" : "crash";
      throw error;
    } finally {
      this.running--;
      call.endTick = this.tick++;
    }
  }

  private next(subTaskId: string, attempt: number, prompt: string): FakeAttempt {
    const { script, fallback } = this.options;
    if (typeof script === "function") return script({ subTaskId, attempt, prompt });
    const index = this.consumed.get(subTaskId) ?? 0;
    this.consumed.set(subTaskId, index + 1);
    const scripted = script?.[subTaskId]?.[index] ?? fallback;
    if (!scripted) {
      throw new UnexpectedCallError(
        `FakeExecutor has no attempt #${index + 1} scripted for sub-task "${subTaskId}"`,
      );
    }
    return scripted;
  }

  private async play(
    attempt: FakeAttempt,
    options: ExecuteOptions,
  ): Promise<Omit<AttemptResult, "durationMs">> {
    const emit = options.onEvent ?? (() => {});
    if (attempt.type === "hang") {
      await new Promise<never>((_, reject) => {
        const abort = () => reject(options.abortSignal.reason ?? new Error("aborted"));
        if (options.abortSignal.aborted) abort();
        else options.abortSignal.addEventListener("abort", abort, { once: true });
      }).catch(() => {});
      return result("cancelled", "", [], { error: "aborted" });
    }
    emit({ type: "step-start" });
    if (attempt.delayMs) {
      try {
        await abortableDelay(attempt.delayMs, options.abortSignal);
      } catch {
        return result("cancelled", "", [], { error: "aborted" });
      }
    }
    switch (attempt.type) {
      case "crash":
        throw new Error(attempt.message ?? "the agent process could not start");
      case "success": {
        const text = attempt.text ?? `Done: ${options.subTask.id}`;
        emit({ type: "text", text });
        emit({ type: "step-finish", reason: "stop" });
        return result("finished", text, ["stop"], {
          usage: { ...defaultUsage, ...attempt.usage },
          filesChanged: attempt.filesChanged ?? [],
        });
      }
      case "truncated": {
        const text = attempt.text ?? "";
        if (text) emit({ type: "text", text });
        emit({ type: "step-finish", reason: "length" });
        return result("truncated", text, ["length"], {
          usage: { ...defaultUsage, ...attempt.usage },
        });
      }
      case "error": {
        const message = attempt.error ?? "provider error";
        emit({ type: "error", message });
        return result("error", "", [], {
          error: message,
          usage: { ...defaultUsage, ...attempt.usage },
        });
      }
    }
  }
}

function result(
  outcome: AttemptOutcome,
  finalText: string,
  stepFinishReasons: string[],
  extra: { usage?: Usage; error?: string; filesChanged?: string[] } = {},
): Omit<AttemptResult, "durationMs"> {
  return {
    outcome,
    finalText,
    toolCalls: [],
    stepFinishReasons,
    filesChanged: extra.filesChanged ?? [],
    usage: extra.usage ?? {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    },
    ...(extra.error ? { error: extra.error } : {}),
  };
}

export function createFakeExecutor(options: FakeExecutorOptions = {}): FakeExecutor {
  return new FakeExecutor(options);
}
