import PQueue from "p-queue";
import {
  ExecutorError,
  isAbortError,
  PlanValidationError,
  StoreError,
  TaskLedgerError,
} from "./errors.js";
import type { EventHub } from "./event-hub.js";
import type { AttemptResult } from "./executor.js";
import type { ResolvedManagerOptions } from "./manager-options.js";
import type { ReviewPlan } from "./plan-review.js";
import { planRequest } from "./planner.js";
import { isJudgeUnavailable, isStuckEntry, type ProgressEntry } from "./progress-entry.js";
import { buildSubTaskPrompt } from "./prompts.js";
import { replanSubTask } from "./replanner.js";
import type { BudgetExhaustion, RunEvent } from "./run-events.js";
import { RunGraph, type SubTaskState } from "./run-graph.js";
import type { RecoveredRun } from "./run-recovery.js";
import type { RunReport, RunStatus, SubTaskReport } from "./run-report.js";
import type { SubTask } from "./sub-task.js";
import { type TaskLedger, type TaskLedgerInput, validateTaskLedger } from "./task-ledger.js";
import { estimateTokens } from "./tokens.js";
import { addUsage, emptyUsage, totalTokens, type Usage } from "./usage.js";

export interface RunInput {
  runId: string;
  request: string;
  cwd: string;
  /** A plan the host already has; skips the planning call. */
  plan?: TaskLedgerInput;
  /** Tokens the host's planning of `plan` took. */
  planUsage?: Usage;
  /** This run's plan review, instead of the manager's. */
  reviewPlan?: ReviewPlan;
  abortSignal?: AbortSignal;
  /** The state of an earlier session of this run, rebuilt from its log: the run continues it. */
  recovered?: RecoveredRun;
}

/** Where a resumed sub-task picks up. */
interface ResumePoint {
  previous?: { attempt: number; entry: ProgressEntry };
  carried?: { attempt: number; result: AttemptResult; entry?: ProgressEntry };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type NewEvent = DistributiveOmit<RunEvent, "runId" | "seq" | "time">;

// Tokens of the overall request repeated in each sub-task's prompt, for orientation only.
const requestTokensInPrompt = 2000;

/** One run of the manager loop: plan, dispatch, execute, evaluate, retry, report. */
export class RunExecution {
  private readonly controller = new AbortController();
  private readonly graph = new RunGraph();
  private readonly states = this.graph.states;
  private enqueue: (state: SubTaskState) => void = () => {};
  /** Sub-tasks whose last attempt threw an executor error marked not retryable. */
  private readonly fatalExecutorErrors = new Set<string>();
  private replansInRun = 0;
  private planRejected: string | undefined;
  private managerUsage: Usage = emptyUsage();
  private agentUsage: Usage = emptyUsage();
  private seq = 0;
  private recordChain: Promise<void> = Promise.resolve();
  private cancelled = false;
  private budgetStop: BudgetExhaustion | undefined;
  private fatal: unknown;
  private readonly startedAt = new Date();
  /** Wall time earlier sessions of a resumed run took. */
  private readonly earlierElapsedMs: number;

  constructor(
    private readonly options: ResolvedManagerOptions,
    private readonly input: RunInput,
    private readonly hub: EventHub,
  ) {
    this.earlierElapsedMs = input.recovered?.elapsedMs ?? 0;
  }

  async execute(): Promise<RunReport> {
    const userSignal = this.input.abortSignal;
    const onUserAbort = () => {
      this.cancelled = true;
      this.controller.abort(userSignal?.reason);
    };
    if (userSignal?.aborted) onUserAbort();
    else userSignal?.addEventListener("abort", onUserAbort, { once: true });
    const { maxDurationMs } = this.options.budget;
    const timer =
      maxDurationMs === undefined
        ? undefined
        : setTimeout(
            () => {
              void this.exhaust({ kind: "time", limit: maxDurationMs, used: this.elapsed() });
              this.controller.abort(new Error("time budget reached"));
            },
            Math.max(0, maxDurationMs - this.earlierElapsedMs),
          );
    let release: (() => Promise<void>) | undefined;
    try {
      // Claimed before the first record, so another process cannot run this run at the same time.
      release = await this.options.store.lock?.(this.input.runId);
      return await this.runLoop();
    } catch (error) {
      if (!StoreError.isInstance(error)) {
        await this.record({ type: "run-failed", error: errorInfo(error) }).catch(() => {});
      }
      throw error;
    } finally {
      clearTimeout(timer);
      userSignal?.removeEventListener("abort", onUserAbort);
      this.controller.abort();
      await release?.().catch(() => {});
    }
  }

  private async runLoop(): Promise<RunReport> {
    const { recovered } = this.input;
    let ledger: TaskLedger;
    try {
      if (recovered) {
        await this.resumeFrom(recovered);
        ledger = recovered.ledger ?? (await this.plan());
      } else {
        await this.record({
          type: "run-started",
          request: this.input.request,
          cwd: this.input.cwd,
        });
        ledger = await this.plan();
      }
    } catch (error) {
      if (this.cancelled && isAbortError(error)) return this.finish();
      throw error;
    }
    if (recovered?.pendingPlanReview) ledger = (await this.review("plan", ledger)) ?? ledger;
    if (recovered?.planRejected !== undefined) this.planRejected = recovered.planRejected;
    // A resumed run keeps the order sub-tasks first appeared in, replaced ones included.
    const definitions = new Map(ledger.subTasks.map((subTask) => [subTask.id, subTask]));
    for (const [id, saved] of recovered?.subTasks ?? []) {
      const subTask = definitions.get(id) ?? saved.definition;
      if (subTask && !this.states.has(id)) this.graph.add(subTask, 0);
    }
    for (const subTask of ledger.subTasks)
      if (!this.states.has(subTask.id)) this.graph.add(subTask, 0);
    const resumePoints = recovered ? await this.restore(recovered) : new Map<string, ResumePoint>();

    // Each completion only looks at its own dependents, so dispatch stays linear in the graph.
    const queue = new PQueue({ concurrency: this.options.concurrency });
    const enqueue = (state: SubTaskState) => {
      if (this.stopping() || state.status !== "pending" || state.queued) return;
      state.queued = true;
      void queue.add(() => this.runSubTask(state, onCompleted, resumePoints.get(state.subTask.id)));
    };
    this.enqueue = enqueue;
    const onCompleted = (ready: SubTaskState[]) => {
      for (const state of ready) enqueue(state);
    };
    const scheduleReady = () => {
      for (const state of this.states.values()) if (state.waitingOn === 0) enqueue(state);
    };
    scheduleReady();
    await queue.onIdle();
    this.throwIfFatal();
    await this.settleUnstarted();
    return this.finish();
  }

  /** Continues the log of an earlier session: stops what it left running, then says so. */
  private async resumeFrom(recovered: RecoveredRun): Promise<void> {
    this.seq = recovered.nextSeq;
    this.managerUsage = recovered.managerUsage;
    this.agentUsage = recovered.agentUsage;
    this.budgetStop = recovered.budgetStop;
    const interrupted = [...recovered.subTasks].flatMap(([subTaskId, state]) =>
      state.interrupted
        ? [
            {
              subTaskId,
              attempt: state.interrupted.attempt,
              processes: state.interrupted.processes,
            },
          ]
        : [],
    );
    const processes = interrupted.flatMap((i) => i.processes);
    if (processes.length > 0) await this.options.executor.reclaim?.(processes);
    await this.record({
      type: "run-resumed",
      interrupted: interrupted.map(({ subTaskId, attempt }) => ({ subTaskId, attempt })),
      reclaimed: processes.length,
    });
  }

  /** Puts each sub-task where the log left it; returns where the unfinished ones pick up. */
  private async restore(recovered: RecoveredRun): Promise<Map<string, ResumePoint>> {
    const points = new Map<string, ResumePoint>();
    const done = [...recovered.subTasks].filter(([, s]) => s.status === "completed");
    for (const [id, saved] of done.sort(([, a], [, b]) => (a.order ?? 0) - (b.order ?? 0))) {
      const state = this.states.get(id);
      if (!state || !saved.entry) continue;
      state.attempts = saved.attempts;
      this.graph.complete(state, saved.entry);
    }
    this.replansInRun = recovered.replans;
    for (const [id, saved] of recovered.subTasks) {
      const state = this.states.get(id);
      if (saved.status !== "replaced" || !state) continue;
      // Replaced sub-tasks are out of the plan but stay in the report.
      Object.assign(state, {
        status: "replaced",
        attempts: saved.attempts,
        reason: saved.reason,
        replacedBy: saved.replacedBy ?? [],
        ...(saved.entry ? { entry: saved.entry } : {}),
      });
    }
    for (const [id, saved] of recovered.subTasks) {
      const state = this.states.get(id);
      if (!state || saved.status === "completed" || saved.status === "replaced") continue;
      state.attempts = saved.attempts;
      state.alternatesUsed = saved.alternatesUsed;
      if (saved.agentModel !== undefined) state.agentModel = saved.agentModel;
      state.stepAttempts =
        saved.agentModel !== undefined
          ? this.options.maxRetries + saved.attemptsInStep
          : saved.attemptsInStep;
      if (saved.entry) state.entry = saved.entry;
      if (saved.status === "failed" || saved.status === "skipped") {
        state.status = saved.status;
        state.reason = saved.reason;
        continue;
      }
      if (saved.carried) {
        points.set(id, {
          carried: saved.carried,
          ...(saved.previous ? { previous: saved.previous } : {}),
        });
      } else if (saved.interrupted) {
        points.set(id, {
          previous: {
            attempt: saved.interrupted.attempt,
            entry: interruptedEntry(saved.interrupted.attempt, saved.previous?.entry),
          },
        });
      } else if (saved.previous) {
        points.set(id, { previous: saved.previous });
      }
    }
    // A crash between a failure and the skips it implies leaves dependents to skip now.
    for (const [id, state] of this.states) {
      if (state.status === "failed" || state.status === "skipped") await this.skipDependents(id);
    }
    return points;
  }

  /**
   * Asks the host's `reviewPlan`, when there is one; the request and the answer are both logged,
   * so a run that stops while waiting asks again when resumed. Returns the ledger to run, or
   * `undefined` when the review rejected it.
   */
  private async review(
    kind: "plan" | "replan",
    ledger: TaskLedger,
    change: { replaced: string[]; reason: string } | undefined = undefined,
  ): Promise<TaskLedger | undefined> {
    const hook = this.input.reviewPlan ?? this.options.reviewPlan;
    if (!hook) return ledger;
    await this.record({ type: "plan-review-requested", kind, ledger, ...(change ?? {}) });
    const decision = await hook({
      runId: this.input.runId,
      request: this.input.request,
      kind,
      ledger,
      ...(change ?? {}),
      abortSignal: this.controller.signal,
    });
    if (decision.action === "reject") {
      const reason = decision.reason ?? "rejected in review";
      await this.record({ type: "plan-reviewed", kind, action: "reject", reason });
      if (kind === "plan") this.planRejected = reason;
      return undefined;
    }
    const reviewed =
      decision.action === "edit"
        ? validateTaskLedger(decision.ledger, { maxSubTasks: this.options.maxSubTasks })
        : ledger;
    if (kind === "replan") this.checkKeepsCompleted(reviewed);
    await this.record({ type: "plan-reviewed", kind, action: decision.action, ledger: reviewed });
    return reviewed;
  }

  /** A replan may change what is left to do, never drop what is done. */
  private checkKeepsCompleted(ledger: TaskLedger): void {
    const ids = new Set(ledger.subTasks.map((s) => s.id));
    const dropped = [...this.states.values()].filter(
      (s) => s.status === "completed" && !ids.has(s.subTask.id),
    );
    if (dropped.length > 0) {
      throw new PlanValidationError(
        dropped.map((s) => ({
          kind: "unknown-dependency" as const,
          subTaskId: s.subTask.id,
          message: `the edited plan drops completed sub-task "${s.subTask.id}"; completed work is kept`,
        })),
        { context: "The edited replan is not usable" },
      );
    }
  }

  /** The next alternate agent model this sub-task has not tried, if any. */
  private nextAlternate(state: SubTaskState): string | undefined {
    return this.options.alternateAgentModels[state.alternatesUsed];
  }

  /**
   * The last step of the ladder: replace the failed sub-task and its dependents with new
   * sub-tasks from the model, keeping completed work. Returns false when not allowed or not usable.
   */
  private async tryReplan(
    state: SubTaskState,
    entry: ProgressEntry,
    reason: string,
  ): Promise<boolean> {
    const { model, replan } = this.options;
    if (!model || !replan.enabled) return false;
    if (state.replans >= replan.maxPerSubTask || this.replansInRun >= replan.maxPerRun)
      return false;
    // Counted before any await, so sub-tasks failing at once cannot all pass the cap.
    this.replansInRun++;
    const replaced = [state.subTask.id, ...this.graph.pendingDownstream(state.subTask.id)];
    await this.record({
      type: "sub-task-escalated",
      subTaskId: state.subTask.id,
      step: "replan",
      reason,
    });
    const current = this.graph.current();
    let revised: TaskLedger;
    let usage: Usage;
    try {
      const result = await replanSubTask({
        model,
        request: this.input.request,
        ledger: current,
        progress: new Map(
          [...this.states].map(([id, s]) => [
            id,
            {
              status: s.status,
              outputData: s.status === "completed" ? (s.entry?.outputData ?? "") : "",
            },
          ]),
        ),
        failed: state.subTask,
        attempts: state.attempts,
        lastEntry: entry,
        replaced,
        usedIds: new Set(this.states.keys()),
        maxSubTasks: this.options.maxSubTasks,
        abortSignal: this.controller.signal,
      });
      revised = result.ledger;
      usage = result.usage;
      this.managerUsage = addUsage(this.managerUsage, usage);
      await this.checkTokenBudget();
      const reviewed = await this.review("replan", revised, { replaced, reason });
      if (!reviewed) {
        state.reason = "A replan was proposed and rejected in review.";
        return false;
      }
      revised = reviewed;
    } catch (error) {
      if (this.controller.signal.aborted) return false;
      state.reason = `Replanning failed: ${describeError(error)}`;
      return false;
    }
    const kept = new Set([...this.states.keys()]);
    const added = revised.subTasks.filter((s) => !kept.has(s.id));
    const why = `Replanned after ${state.attempts} attempt(s) of ${state.subTask.id}: ${reason}`;
    await this.record({
      type: "plan-revised",
      ledger: revised,
      replaced,
      added: added.map((s) => s.id),
      reason: why,
      usage,
    });
    this.applyRevision(revised, replaced, added, why, state.replans + 1);
    return true;
  }

  /** Takes the replaced sub-tasks out of the graph and puts the new ones in, ready ones queued. */
  private applyRevision(
    ledger: TaskLedger,
    replaced: readonly string[],
    added: readonly SubTask[],
    reason: string,
    replans: number,
  ): void {
    for (const id of replaced) {
      const state = this.states.get(id);
      if (!state) continue;
      state.status = "replaced";
      state.reason = reason;
      state.replacedBy = added.map((s) => s.id);
    }
    // Sub-tasks the reviewer changed in place (criteria, descriptions) take their new text.
    for (const subTask of ledger.subTasks) this.graph.redefine(subTask);
    const states = added.map((subTask) => this.graph.add(subTask, replans));
    for (const state of states) if (state.waitingOn === 0) this.enqueue(state);
  }

  private async plan(): Promise<TaskLedger> {
    const { maxSubTasks } = this.options;
    if (this.input.plan !== undefined) {
      const ledger = validateTaskLedger(this.input.plan, { maxSubTasks });
      const usage = this.input.planUsage ?? emptyUsage();
      this.managerUsage = addUsage(this.managerUsage, usage);
      await this.record({ type: "plan-created", ledger, decomposed: true, repaired: false, usage });
      await this.checkTokenBudget();
      return (await this.review("plan", ledger)) ?? ledger;
    }
    const result = await planRequest({
      model: this.options.model,
      request: this.input.request,
      maxSubTasks,
      decompose: this.options.decompose,
      abortSignal: this.controller.signal,
    });
    this.managerUsage = addUsage(this.managerUsage, result.usage);
    await this.record({
      type: "plan-created",
      ledger: result.ledger,
      decomposed: result.decomposed,
      repaired: result.repaired,
      usage: result.usage,
    });
    await this.checkTokenBudget();
    return (await this.review("plan", result.ledger)) ?? result.ledger;
  }

  /** Attempts one sub-task until it completes, fails for good, or the run stops. */
  private async runSubTask(
    state: SubTaskState,
    onCompleted: (ready: SubTaskState[]) => void,
    resume: ResumePoint = {},
  ): Promise<void> {
    const { subTask } = state;
    let previous = resume.previous;
    // An attempt a crash left finished but unjudged is judged now, not run again.
    let carried = resume.carried;
    while (carried || !this.stopping()) {
      let attempt: number;
      let result: AttemptResult;
      let judged: ProgressEntry | undefined;
      state.status = "running";
      if (carried) {
        ({ attempt, result, entry: judged } = carried);
        carried = undefined;
      } else {
        attempt = ++state.attempts;
        state.stepAttempts++;
        result = await this.runAttempt(subTask, attempt, previous, state.agentModel);
        if (this.controller.signal.aborted) {
          this.stopRunning(state, result);
          return;
        }
      }

      let entry = judged;
      if (!entry) {
        entry = await this.evaluate(subTask, attempt, result);
        this.managerUsage = addUsage(this.managerUsage, entry.usage);
        await this.record({ type: "sub-task-evaluated", subTaskId: subTask.id, attempt, entry });
        await this.checkTokenBudget();
      }

      if (entry.completed) {
        const ready = this.graph.complete(state, entry);
        await this.record({
          type: "sub-task-completed",
          subTaskId: subTask.id,
          attempts: attempt,
          entry,
        });
        onCompleted(ready);
        return;
      }
      state.entry = entry;
      if (this.controller.signal.aborted) {
        this.stopRunning(state, result);
        return;
      }
      const stuck = isStuckEntry(entry);
      const fatal = this.fatalExecutorErrors.has(subTask.id) ? result.error : undefined;
      if (!fatal && !stuck && state.stepAttempts <= this.options.maxRetries && !this.stopping()) {
        previous = await this.announceRetry(subTask.id, attempt, entry);
        continue;
      }
      // The same attempt again would cost the same and end the same: the ladder moves on.
      const why = stuck
        ? `No progress: attempt ${attempt} repeated the previous one. ${entry.feedback}`
        : `Incomplete after ${attempt} attempt(s). ${entry.feedback || entry.summary}`;
      if (fatal) {
        await this.fail(state, `The executor cannot run attempts: ${fatal}`);
        return;
      }
      // A judge that could not answer is no reason to change the agent model or the plan.
      if (!this.stopping() && isJudgeUnavailable(entry)) {
        await this.fail(state, why);
        return;
      }
      if (!this.stopping()) {
        const alternate = this.nextAlternate(state);
        if (alternate !== undefined) {
          state.alternatesUsed++;
          state.agentModel = alternate;
          // One attempt on each alternate model.
          state.stepAttempts = this.options.maxRetries;
          await this.record({
            type: "sub-task-escalated",
            subTaskId: subTask.id,
            step: "alternate-model",
            reason: why,
            agentModel: alternate,
          });
          previous = await this.announceRetry(subTask.id, attempt, entry);
          continue;
        }
        if (await this.tryReplan(state, entry, why)) return;
        await this.fail(state, state.reason ? `${why} ${state.reason}` : why);
        return;
      }
      await this.fail(
        state,
        `Incomplete after ${attempt} attempt(s); not retried because ${this.stopReason()}. ${entry.feedback || entry.summary}`,
      );
      return;
    }
    // The run began stopping between a retry's announcement and its start.
    if (state.status === "running") {
      if (this.cancelled) {
        state.status = "cancelled";
        state.reason = "The run was cancelled before this sub-task's retry started.";
      } else {
        await this.fail(
          state,
          `Incomplete after ${state.attempts} attempt(s); not retried because ${this.stopReason()}.`,
        );
      }
    }
  }

  /** Records that `attempt` is followed by another; returns what the next prompt builds on. */
  private async announceRetry(
    subTaskId: string,
    attempt: number,
    entry: ProgressEntry,
  ): Promise<{ attempt: number; entry: ProgressEntry }> {
    await this.record({
      type: "sub-task-retrying",
      subTaskId,
      attempt: attempt + 1,
      feedback: entry.feedback,
    });
    return { attempt, entry };
  }

  /** Builds the attempt's prompt, announces it, runs it and records how it ended. */
  private async runAttempt(
    subTask: SubTask,
    attempt: number,
    previous: { attempt: number; entry: ProgressEntry } | undefined,
    agentModel: string | undefined,
  ): Promise<AttemptResult> {
    const prompt = buildSubTaskPrompt({
      request: this.input.request,
      subTask,
      context: this.graph.contextFor(subTask, this.options.contextTokenBudget),
      requestTokens: requestTokensInPrompt,
      ...(previous ? { previous } : {}),
    });
    // Attempt numbers only grow, in the log too, so no attempt is ever dispatched twice.
    await this.record({
      type: "sub-task-started",
      subTaskId: subTask.id,
      attempt,
      promptTokens: estimateTokens(prompt),
      ...(agentModel ? { agentModel } : {}),
    });
    const result = await this.attempt(prompt, subTask, attempt, agentModel);
    this.agentUsage = addUsage(this.agentUsage, result.usage);
    await this.record({ type: "attempt-finished", subTaskId: subTask.id, attempt, result });
    return result;
  }

  /** Runs the executor; a throw becomes an `error` attempt so one crash never ends the run. */
  private async attempt(
    prompt: string,
    subTask: SubTask,
    attempt: number,
    agentModel: string | undefined,
  ): Promise<AttemptResult> {
    const started = performance.now();
    try {
      return await this.options.executor.run(prompt, {
        subTask,
        attempt,
        cwd: this.input.cwd,
        ...(agentModel ? { agentModel } : {}),
        abortSignal: this.controller.signal,
        onEvent: (event) => {
          void this.record({ type: "agent-event", subTaskId: subTask.id, attempt, event }, false);
        },
        onProcess: (process) => {
          void this.record({ type: "attempt-process", subTaskId: subTask.id, attempt, ...process });
        },
      });
    } catch (error) {
      const aborted = this.controller.signal.aborted && isAbortError(error);
      // A missing binary or a bad setup fails every attempt alike: no point retrying it.
      if (ExecutorError.isInstance(error) && !error.isRetryable)
        this.fatalExecutorErrors.add(subTask.id);
      return {
        outcome: aborted ? "cancelled" : "error",
        finalText: "",
        toolCalls: [],
        stepFinishReasons: [],
        filesChanged: [],
        usage: emptyUsage(),
        error: aborted ? "aborted" : describeError(error),
        durationMs: performance.now() - started,
      };
    }
  }

  /** Runs the evaluator; a throw becomes an incomplete entry that says why. */
  private async evaluate(
    subTask: SubTask,
    attempt: number,
    result: AttemptResult,
  ): Promise<ProgressEntry> {
    try {
      return await this.options.evaluator.evaluate(
        {
          runId: this.input.runId,
          request: this.input.request,
          subTask,
          attempt,
          result,
          cwd: this.input.cwd,
        },
        { abortSignal: this.controller.signal },
      );
    } catch (error) {
      const reason = `The evaluator failed: ${describeError(error)}`;
      return {
        completed: false,
        summary: reason,
        outputData: "",
        feedback: reason,
        evidence: [{ source: "evaluator", passed: false, detail: reason }],
        usage: emptyUsage(),
      };
    }
  }

  private stopRunning(state: SubTaskState, result: AttemptResult): void {
    state.status = "cancelled";
    state.reason = this.cancelled
      ? "The run was cancelled while this sub-task was running."
      : `Stopped while running: ${this.stopReason()}.`;
    if (result.finalText) state.reason += ` Last output: ${result.finalText.slice(0, 200)}`;
  }

  private async fail(state: SubTaskState, reason: string): Promise<void> {
    state.status = "failed";
    state.reason = reason;
    await this.record({
      type: "sub-task-failed",
      subTaskId: state.subTask.id,
      attempts: state.attempts,
      reason,
    });
    await this.skipDependents(state.subTask.id);
  }

  /** Skips every sub-task downstream of `failedId`; independent branches go on. */
  private async skipDependents(failedId: string): Promise<void> {
    const frontier = [failedId];
    for (let id = frontier.shift(); id !== undefined; id = frontier.shift()) {
      for (const dependent of this.graph.dependentsOf(id)) {
        const state = this.states.get(dependent)!;
        if (state.status !== "pending") continue;
        const blockedBy = [...new Set(state.subTask.dependsOn)].filter((dep) => {
          const status = this.states.get(dep)?.status;
          return status === "failed" || status === "skipped";
        });
        state.status = "skipped";
        state.reason = `Depends on ${blockedBy.join(", ")}, which did not complete.`;
        frontier.push(dependent);
        await this.record({
          type: "sub-task-skipped",
          subTaskId: dependent,
          reason: state.reason,
          blockedBy,
        });
      }
    }
  }

  /** Sub-tasks never started because the run was cancelled or a budget ran out. */
  private async settleUnstarted(): Promise<void> {
    for (const state of this.states.values()) {
      if (state.status !== "pending") continue;
      if (this.cancelled || this.planRejected !== undefined) {
        state.status = "cancelled";
        state.reason = this.cancelled
          ? "The run was cancelled before this sub-task started."
          : `Not run: ${this.stopReason()}.`;
        continue;
      }
      state.status = "skipped";
      state.reason = `Not started: ${this.stopReason()}.`;
      await this.record({
        type: "sub-task-skipped",
        subTaskId: state.subTask.id,
        reason: state.reason,
        blockedBy: [],
      });
    }
  }

  private async checkTokenBudget(): Promise<void> {
    const { maxTokens } = this.options.budget;
    if (maxTokens === undefined) return;
    const used = totalTokens(addUsage(this.managerUsage, this.agentUsage));
    if (used >= maxTokens) await this.exhaust({ kind: "tokens", limit: maxTokens, used });
  }

  private async exhaust(exhaustion: BudgetExhaustion): Promise<void> {
    if (this.budgetStop || this.cancelled) return;
    this.budgetStop = exhaustion;
    await this.record({ type: "budget-exhausted", ...exhaustion });
  }

  private stopping(): boolean {
    return (
      this.cancelled ||
      this.planRejected !== undefined ||
      this.budgetStop !== undefined ||
      this.fatal !== undefined
    );
  }

  private stopReason(): string {
    if (this.cancelled) return "the run was cancelled";
    if (this.planRejected !== undefined)
      return `the plan was rejected in review (${this.planRejected})`;
    const stop = this.budgetStop;
    if (stop?.kind === "tokens")
      return `the token budget of ${stop.limit} was reached (${stop.used} used)`;
    if (stop?.kind === "time") return `the time budget of ${stop.limit} ms was reached`;
    return "the run stopped";
  }

  private async finish(): Promise<RunReport> {
    this.throwIfFatal();
    const subTasks: SubTaskReport[] = [...this.states.values()].map((state) => ({
      id: state.subTask.id,
      title: state.subTask.title,
      status: state.status,
      attempts: state.attempts,
      summary: state.entry?.summary ?? "",
      outputData: state.status === "completed" ? (state.entry?.outputData ?? "") : "",
      reason: state.status === "completed" ? null : state.reason,
      replacedBy: state.replacedBy,
    }));
    // A replaced sub-task's goal lives on in its replacements; only those count.
    const live = subTasks.filter((s) => s.status !== "replaced");
    const completed = live.filter((s) => s.status === "completed").length;
    let status: RunStatus;
    if (this.cancelled || this.planRejected !== undefined) status = "cancelled";
    else if (completed === live.length && completed > 0) status = "completed";
    else if (completed > 0) status = "partial";
    else status = "failed";
    const notDone = live.filter((s) => s.status !== "completed");
    let reason: string | null = null;
    if (status !== "completed") {
      reason = this.stopping()
        ? `Stopped: ${this.stopReason()}.`
        : `${notDone.length} of ${live.length} sub-task(s) did not complete: ${notDone
            .map((s) => `${s.id} (${s.status})`)
            .join(", ")}.`;
    }
    const finishedAt = new Date();
    const report: RunReport = {
      runId: this.input.runId,
      request: this.input.request,
      status,
      reason,
      subTasks,
      usage: {
        manager: this.managerUsage,
        agents: this.agentUsage,
        total: addUsage(this.managerUsage, this.agentUsage),
      },
      startedAt: this.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs: finishedAt.getTime() - this.startedAt.getTime(),
    };
    await this.record({ type: "run-finished", report });
    this.throwIfFatal();
    return report;
  }

  /**
   * Appends the event to the store, then announces it; appends are serialised so the store and
   * the listeners see one order. `agent-event`s are announced but not stored: they are not state.
   */
  private record(event: NewEvent, store = true): Promise<void> {
    const full = {
      ...event,
      runId: this.input.runId,
      seq: this.seq++,
      time: new Date().toISOString(),
    } as RunEvent;
    const step = this.recordChain.then(async () => {
      if (this.fatal !== undefined) return;
      if (store) {
        try {
          await this.options.store.append(this.input.runId, full);
        } catch (cause) {
          this.fatal = StoreError.isInstance(cause)
            ? cause
            : new StoreError(`Could not append to the run store: ${describeError(cause)}`, {
                cause,
              });
          this.controller.abort(this.fatal);
          return;
        }
      }
      this.hub.emit(full);
    });
    this.recordChain = step;
    return step;
  }

  private throwIfFatal(): void {
    if (this.fatal !== undefined) throw this.fatal;
  }

  private elapsed(): number {
    return this.earlierElapsedMs + Date.now() - this.startedAt.getTime();
  }
}

/** What the next attempt is told about one that a stopped manager process never saw finish. */
function interruptedEntry(attempt: number, before: ProgressEntry | undefined): ProgressEntry {
  const note =
    `Attempt ${attempt} was interrupted before it finished: the manager process stopped. ` +
    "Files it changed may already be in the working directory: check what is already done and " +
    "finish the rest instead of starting over.";
  return {
    completed: false,
    summary: note,
    outputData: "",
    feedback: before?.feedback ? `${note} Before that: ${before.feedback}` : note,
    evidence: [],
    usage: emptyUsage(),
  };
}

function errorInfo(error: unknown): { code: string; message: string } {
  if (TaskLedgerError.isInstance(error)) return { code: error.code, message: error.message };
  return { code: "unknown", message: error instanceof Error ? error.message : String(error) };
}

function describeError(error: unknown): string {
  if (TaskLedgerError.isInstance(error)) return `${error.message} [${error.code}]`;
  if (error instanceof Error) return error.message;
  return String(error);
}
