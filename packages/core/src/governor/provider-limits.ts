import { ModelError } from "../errors/errors.js";
import type { SubTaskState } from "../log/run-state.js";
import type { AttemptResult, ProviderLimit } from "../ports/executor.js";
import type { GenerateRequest, GenerateResult, LanguageModel } from "../ports/model.js";
import type { RunRecorder } from "../run/run-recorder.js";
import type { StopConditions } from "../run/stop-conditions.js";
import { oneLine } from "../text/text-clip.js";
import { type GovernorTicket, ProviderGovernor } from "./provider-governor.js";

// A provider still refusing after this much waiting in one run is treated as out of quota.
const maxWaitPerProviderMs = 15 * 60_000;
// The manager's own call waits for its provider at most this many times before it fails.
const maxManagerCallWaits = 8;

/** The governor key of an attempt on `agentModel` (the executor's own model when undefined). */
export function agentKey(agentModel: string | undefined): string {
  return agentModel ?? "agent";
}

/** What a limit leaves the sub-task: wait and run again, or waiting cannot help (`line` says why). */
export type LimitOutcome = { kind: "wait" } | { kind: "exhausted"; line: string };

/** A limit's outcome and its `provider-limited` record, still to be written (once). */
export interface PendingLimit {
  outcome: LimitOutcome;
  record(): Promise<void>;
}

/**
 * A run's side of its provider governor: turns attempts that ended `rate-limited` and the
 * manager's refused calls into pauses (recorded, so a resumed run keeps waiting), and knows when
 * waiting cannot help: a quota, a wait past the run's time budget, a provider that keeps refusing.
 */
export class ProviderLimits {
  readonly governor: ProviderGovernor;

  constructor(
    private readonly recorder: RunRecorder,
    private readonly stop: StopConditions,
    concurrency: number,
  ) {
    this.governor = new ProviderGovernor(concurrency);
    // Pauses a stopped session recorded still hold.
    for (const [key, waits] of recorder.state.providers)
      if (waits.until !== undefined) this.governor.restore(key, waits.until);
  }

  /** True when a start toward `key` would wait now (its provider paused it, or it is at its limit). */
  waiting(key: string): boolean {
    return this.governor.wouldWait(key);
  }

  /** Holds a place toward `key` for an attempt; its first model answer lets the next one in. */
  acquire(key: string): Promise<GovernorTicket> {
    return this.governor.acquire(key, this.stop.signal);
  }

  /**
   * An attempt of `s` ended `rate-limited`: pauses its provider now. `alternateLeft` is true when
   * an alternate agent model is left for a sub-task whose provider's quota is gone. Waiting cannot
   * help: recorded at once (a stop must hold before another start). A pause: `record` writes it,
   * to be called once the attempt's own `attempt-finished` is logged, so a `kill -9` between the
   * two never leaves a pause whose attempt a resume would take for interrupted (and count).
   */
  async attemptLimited(
    s: SubTaskState,
    attempt: number,
    agentModel: string | undefined,
    result: AttemptResult,
    alternateLeft: boolean,
  ): Promise<PendingLimit> {
    const limit = limitOf(result);
    const pending = this.limit(agentKey(agentModel), providerOf(limit, agentModel), limit, {
      subTaskId: s.subTask.id,
      attempt,
      alternateLeft,
    });
    if (pending.outcome.kind === "wait") return pending;
    await pending.record();
    return { outcome: pending.outcome, record: async () => {} };
  }

  /** `model` with the governor around it: a call its provider refuses waits and is asked again. */
  governed(model: LanguageModel): LanguageModel {
    const key = `${model.provider}/${model.modelId}`;
    const generate = async <T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> => {
      for (let waits = 0; ; waits++) {
        const ticket = await this.acquire(key);
        try {
          const answer = await model.generate(request);
          ticket.answered();
          return answer;
        } catch (error) {
          const limit = modelLimitOf(error);
          if (!limit || limit.kind === "quota" || waits >= maxManagerCallWaits) throw error;
          const { outcome, record } = this.limit(key, model.provider, limit, {
            call: "manager",
            alternateLeft: false,
          });
          await record();
          if (outcome.kind === "exhausted") throw error;
        } finally {
          ticket.release();
        }
      }
    };
    return { provider: model.provider, modelId: model.modelId, generate };
  }

  close(): void {
    this.governor.close();
  }

  /** What a limit leaves its sub-task or call; the governor is paused already, nothing recorded yet. */
  private limit(
    key: string,
    provider: string,
    limit: ProviderLimit,
    who: { subTaskId?: string; attempt?: number; call?: "manager"; alternateLeft: boolean },
  ): PendingLimit {
    const { subTaskId, attempt, call } = who;
    const whoRecord = {
      ...(subTaskId === undefined ? {} : { subTaskId }),
      ...(attempt === undefined ? {} : { attempt }),
      ...(call ? { call } : {}),
    };
    const exhausted = this.exhaustion(key, limit);
    if (exhausted !== undefined) {
      const line = `${provider} ${exhausted}`;
      return {
        outcome: { kind: "exhausted", line },
        record: () =>
          this.recorder.record({
            type: "provider-limited",
            key,
            provider,
            limit,
            ...whoRecord,
            waitMs: 0,
            reason: line,
            ...(who.alternateLeft ? {} : { stops: true as const }),
          }),
      };
    }
    const pause = this.governor.limited(key, limit.retryAfterMs);
    return {
      outcome: { kind: "wait" },
      record: () =>
        this.recorder.record({
          type: "provider-limited",
          key,
          provider,
          limit,
          ...whoRecord,
          until: new Date(pause.until).toISOString(),
          waitMs: pause.waitMs,
        }),
    };
  }

  /** Why waiting cannot help, in words after the provider's name; undefined when it can. */
  private exhaustion(key: string, limit: ProviderLimit): string | undefined {
    const said = oneLine(limit.message, 300);
    if (limit.kind === "quota") return `says its quota is exhausted: ${said}`;
    const left = this.stop.remainingMs();
    if (limit.retryAfterMs !== undefined && left !== undefined && limit.retryAfterMs > left)
      return `asks to wait ${Math.ceil(limit.retryAfterMs / 1000)} s, more than the run's time budget leaves (${Math.ceil(left / 1000)} s): ${said}`;
    const waited = this.recorder.state.providers.get(key)?.waitedMs ?? 0;
    if (waited >= maxWaitPerProviderMs)
      return `kept refusing after ${Math.round(waited / 60_000)} min of waiting: ${said}`;
    return undefined;
  }
}

/** The limit an attempt ended on; one without its `limit` is a plain rate limit. */
function limitOf(result: AttemptResult): ProviderLimit {
  return result.limit ?? { kind: "rate-limit", message: result.error ?? "rate-limited" };
}

/** The provider's name for people: what the agent said, else the agent model's prefix. */
function providerOf(limit: ProviderLimit, agentModel: string | undefined): string {
  if (limit.provider) return limit.provider;
  const prefix = agentModel?.split("/")[0];
  return prefix || "the agent's model provider";
}

/** A manager call's refusal as a limit: 429, 529 or an overloaded 503, after the model's own retries. */
function modelLimitOf(error: unknown): ProviderLimit | undefined {
  if (!ModelError.isInstance(error)) return undefined;
  const status = error.statusCode;
  const message = oneLine(error.message, 300);
  if (/insufficient_quota|exceeded your current quota|billing|credit balance/i.test(message))
    return { kind: "quota", statusCode: status ?? 429, message };
  const overloaded = status === 529 || (status === 503 && /overload/i.test(message));
  if (status !== 429 && !overloaded) return undefined;
  return {
    kind: overloaded ? "overloaded" : "rate-limit",
    provider: error.provider,
    statusCode: status,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    message,
  };
}
