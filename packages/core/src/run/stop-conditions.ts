import type { BudgetExhaustion } from "../log/run-events.js";
import { elapsedMs } from "../log/run-state.js";
import type { RunBudget } from "../settings/run-settings.js";
import { oneLine } from "../text/text-clip.js";
import { addUsage, totalTokens } from "../usage/usage.js";
import type { RunRecorder } from "./run-recorder.js";

/**
 * When a run stops starting new work: the host cancelled, a budget ran out, the plan was rejected
 * in review or the store failed. Owns the run's abort controller and its time-budget timer.
 */
export class StopConditions {
  private readonly controller = new AbortController();
  /** Aborted when attempts and model calls must stop now. */
  readonly signal: AbortSignal = this.controller.signal;
  cancelled = false;
  /** The host's own words for its cancel (`controller.abort(reason)`), when it gave some. */
  private cancelReason: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Models already named in a `budget-unenforceable` event this session. */
  private readonly unpricedNamed = new Set<string>();
  private unlisten: (() => void) | undefined;

  constructor(
    private readonly recorder: RunRecorder,
    private readonly budget: RunBudget,
  ) {}

  /** Follows the host's signal and starts the time budget, counting earlier sessions' time. */
  start(userSignal: AbortSignal | undefined): void {
    const onUserAbort = () => {
      this.cancelled = true;
      this.cancelReason = describeAbortReason(userSignal?.reason);
      this.controller.abort(userSignal?.reason);
    };
    if (userSignal?.aborted) onUserAbort();
    else if (userSignal) {
      userSignal.addEventListener("abort", onUserAbort, { once: true });
      this.unlisten = () => userSignal.removeEventListener("abort", onUserAbort);
    }
    const { maxDurationMs } = this.budget;
    if (maxDurationMs === undefined) return;
    const sessionStart = Date.now();
    const before = elapsedMs(this.recorder.state);
    this.timer = setTimeout(
      () => {
        const used = before + Date.now() - sessionStart;
        void this.exhaust({ kind: "time", limit: maxDurationMs, used });
        this.controller.abort(new Error("time budget reached"));
      },
      Math.max(0, maxDurationMs - before),
    );
  }

  /** What is left of the time budget, counting earlier sessions; undefined without one. */
  remainingMs(): number | undefined {
    const { maxDurationMs } = this.budget;
    if (maxDurationMs === undefined) return undefined;
    return Math.max(0, maxDurationMs - elapsedMs(this.recorder.state));
  }

  /** Stops everything still running (the store failed, or the run is over). */
  abort(reason?: unknown): void {
    this.controller.abort(reason);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.unlisten?.();
    this.controller.abort();
  }

  /** Records the first spend budget (tokens, then money) that the run's usage has reached. */
  async checkSpendBudgets(): Promise<void> {
    const { maxTokens, maxCostUsd } = this.budget;
    if (maxTokens === undefined && maxCostUsd === undefined) return;
    const { manager, agents } = this.recorder.state.usage;
    const spent = addUsage(manager, agents);
    const used = totalTokens(spent);
    if (maxTokens !== undefined && used >= maxTokens)
      await this.exhaust({ kind: "tokens", limit: maxTokens, used });
    const cost = spent.costUsd ?? 0;
    const unnamed = (spent.unpricedModels ?? []).filter((m) => !this.unpricedNamed.has(m));
    if (maxCostUsd !== undefined && unnamed.length > 0) {
      for (const model of unnamed) this.unpricedNamed.add(model);
      await this.recorder.record({
        type: "budget-unenforceable",
        kind: "cost",
        limit: maxCostUsd,
        unpricedModels: unnamed,
      });
    }
    if (maxCostUsd !== undefined && cost >= maxCostUsd)
      await this.exhaust({ kind: "cost", limit: maxCostUsd, used: cost });
  }

  private async exhaust(exhaustion: BudgetExhaustion): Promise<void> {
    if (this.recorder.state.budgetStop || this.cancelled) return;
    await this.recorder.record({ type: "budget-exhausted", ...exhaustion });
  }

  stopping(): boolean {
    const { state, fatal } = this.recorder;
    return (
      this.cancelled ||
      state.planRejected !== undefined ||
      state.budgetStop !== undefined ||
      state.providerStop !== undefined ||
      fatal !== undefined
    );
  }

  /** Why the run is stopping, in words for a report; `undefined` while it is not. */
  reason(): string | undefined {
    if (!this.stopping()) return undefined;
    const { planRejected, budgetStop } = this.recorder.state;
    if (this.cancelled) {
      return this.cancelReason
        ? `the run was cancelled: ${this.cancelReason}`
        : "the run was cancelled";
    }
    if (planRejected !== undefined) return `the plan was rejected in review (${planRejected})`;
    if (this.recorder.state.providerStop !== undefined) return this.recorder.state.providerStop;
    if (budgetStop?.kind === "tokens")
      return `the token budget of ${budgetStop.limit} was reached (${budgetStop.used} used)`;
    if (budgetStop?.kind === "time") return `the time budget of ${budgetStop.limit} ms was reached`;
    if (budgetStop?.kind === "cost")
      return `the cost budget of $${budgetStop.limit} was reached ($${budgetStop.used.toFixed(4)} spent)`;
    return "the run stopped";
  }
}

/** A host's abort reason as words: a string or an Error's message; the platform's default says nothing. */
function describeAbortReason(reason: unknown): string | undefined {
  if (typeof reason === "string") return oneLine(reason, 300) || undefined;
  if (reason instanceof Error && reason.name !== "AbortError")
    return oneLine(reason.message, 300) || undefined;
  return undefined;
}
