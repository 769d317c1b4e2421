import { checkAttemptResult } from "../attempt/attempt-result-check.js";
import { evaluateAttempt } from "../attempt/evaluate-attempt.js";
import { interruptedEntry } from "../attempt/interrupted-entry.js";
import { buildSubTaskPrompt } from "../attempt/sub-task-prompt.js";
import {
  type CandidateStart,
  firstRoundReason,
  type Judged,
  roundRunnerUp,
  roundUnchosen,
  runCandidateRound,
} from "../best-of/candidate-round.js";
import { describeError } from "../errors/describe-error.js";
import { ExecutorError, isAbortError } from "../errors/errors.js";
import type { GovernorTicket } from "../governor/provider-governor.js";
import { agentKey, type PendingLimit } from "../governor/provider-limits.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import { mayComplete } from "../log/apply-run-event.js";
import type { CandidateRoundReason } from "../log/run-events.js";
import { dependencyContextFor, type SubTaskState } from "../log/run-state.js";
import { replanStep } from "../plan/plan-steps.js";
import type { AttemptResult } from "../ports/executor.js";
import type { AttemptSpace } from "../ports/workspace.js";
import type { SubTaskFailure } from "../report/run-report.js";
import { oneLine } from "../text/text-clip.js";
import { estimateTokens } from "../text/tokens.js";
import { emptyUsage, totalTokens, type Usage } from "../usage/usage.js";
import { captureWork, finalCommit, integrate, openSpace } from "../workspace/attempt-workspace.js";
import { decideNext } from "./decide-next.js";
import type { RunContext } from "./run-context.js";

// Tokens of the overall request repeated in each sub-task's prompt, for orientation only.
const requestTokensInPrompt = 2000;

/** Runs sub-tasks: attempt, evaluate, ask the ladder what next, and apply its decision. */
export class SubTaskRunner {
  /** Replans under way, counted before any await so sub-tasks failing at once cannot all pass a cap. */
  private replansInFlight = 0;
  /** What each `rate-limited` attempt's limit left its sub-task, by `<sub-task>\0<attempt>`. */
  private readonly limitOutcomes = new Map<string, PendingLimit>();

  constructor(private readonly ctx: RunContext) {}

  /** Attempts one sub-task until it completes, fails for good, or the run stops. */
  async run(id: string): Promise<void> {
    const { state, recorder, stop, settings } = this.ctx;
    const s = state.subTasks.get(id)!;
    // A resumed run: an attempt a stopped process never saw finish runs again, told so; one that
    // finished unjudged is judged now, not run again.
    const isolated = this.ctx.workspace.record.kind === "worktree";
    // An executor whose attempts outlive this process (jobs on workers) is asked for the same one.
    let adopt =
      s.inFlight &&
      !s.inFlight.ended &&
      isolated &&
      this.ctx.options.executor.resumesAttempts &&
      s.inFlight.from
        ? { attempt: s.inFlight.attempt, from: s.inFlight.from }
        : undefined;
    let previous =
      s.inFlight && !adopt
        ? interruptedEntry(s.inFlight.attempt, s.previous, isolated)
        : s.previous;
    let current: Judged | undefined = s.inFlight ? undefined : s.finished && { ...s.finished };
    let retrying = false;
    let roundReason: CandidateRoundReason | undefined;
    for (;;) {
      if (!current) {
        if (stop.stopping()) {
          if (retrying) await this.stoppedBeforeRetry(s);
          return;
        }
        const reason = roundUnchosen(s)
          ? undefined
          : (roundReason ?? (adopt ? undefined : firstRoundReason(this.ctx, s)));
        if (reason !== undefined || roundUnchosen(s)) {
          roundReason = undefined;
          const outcome = await runCandidateRound(this.ctx, this, s, reason);
          if (outcome === "stopped") {
            if (stop.signal.aborted) return this.stopRunning(s);
            if (s.status === "running" || retrying) await this.stoppedBeforeRetry(s);
            return;
          }
          current = { ...s.finished! };
          continue;
        }
        // Its provider is refusing work: the wait needs no agent, so the slot goes to others. The
        // place is taken before the attempt is announced: one start at a time after a pause.
        const key = agentKey(s.agentModel);
        let ticket: GovernorTicket | undefined;
        if (!adopt && this.ctx.limits.waiting(key)) {
          const acquire = () => this.ctx.limits.acquire(key);
          try {
            ticket = await (this.ctx.lendSlot ? this.ctx.lendSlot(acquire) : acquire());
          } catch (error) {
            if (stop.signal.aborted) return this.stopRunning(s);
            throw error;
          }
          if (stop.stopping()) {
            ticket.release();
            retrying = true;
            continue;
          }
        }
        const attempt = adopt?.attempt ?? s.attempts + 1;
        const { result, space } = await this.runAttempt(
          s,
          attempt,
          previous,
          adopt?.from,
          undefined,
          ticket,
        );
        adopt = undefined;
        if (stop.signal.aborted) {
          await space?.dispose();
          return this.stopRunning(s, result);
        }
        if (result.outcome === "rate-limited") {
          await space?.dispose();
          const limited = this.limitOutcomes.get(`${id}\0${attempt}`)?.outcome;
          this.limitOutcomes.delete(`${id}\0${attempt}`);
          if (limited?.kind === "exhausted") {
            const alternate = settings.alternateAgentModels[s.alternatesUsed];
            if (alternate === undefined) return this.fail(s, limited.line, "provider-limit");
            await recorder.record({
              type: "sub-task-escalated",
              subTaskId: id,
              step: "alternate-model",
              reason: limited.line,
              agentModel: alternate,
            });
          }
          // Not a try of the agent's: no feedback, no rung; it runs again once its provider lets it.
          retrying = true;
          continue;
        }
        current = { attempt, result, ...(space ? { space } : {}) };
      }
      let entry = current.entry;
      if (!entry) {
        entry = await this.evaluate(s, current);
        await stop.checkSpendBudgets();
      }
      // One decision for every path: a candidate no round chose is never merged.
      if (mayComplete(s, current.attempt, entry)) {
        const landing = this.ctx.integration
          ? await this.ctx.integration.land(s, current.attempt, entry)
          : await integrate(this.ctx, s, current.attempt, entry).then((conflict) =>
              conflict ? { landed: false as const, entry: conflict } : { landed: true as const },
            );
        if ("stopped" in landing) return this.stopRunning(s, current.result);
        if (landing.landed) {
          const ready = (state.dependents.get(id) ?? []).filter(
            (dependent) => state.subTasks.get(dependent)?.waitingOn === 0,
          );
          this.ctx.schedule(ready);
          return;
        }
        entry = landing.entry;
        // A round's winner that cannot land gives way to the next complete candidate.
        const runnerUp = roundRunnerUp(s, current.attempt);
        if (runnerUp !== undefined && !stop.stopping()) {
          await recorder.record({
            type: "candidate-gave-way",
            subTaskId: id,
            round: s.round!.round,
            attempt: current.attempt,
            winner: runnerUp,
            reason: `Chosen, but its work could not land: ${oneLine(entry.feedback, 300)}`,
          });
          current = { ...s.finished! };
          continue;
        }
      }
      if (stop.signal.aborted) return this.stopRunning(s, current.result);
      const decision = decideNext({ ...s, finished: current }, entry, {
        maxRetries: settings.maxRetries,
        alternateAgentModels: settings.alternateAgentModels,
        candidatesRung: settings.bestOf?.ladder === true,
        replan: {
          ...settings.replan,
          enabled: settings.replan.enabled && this.ctx.options.model !== undefined,
        },
        replansInRun: state.replans + this.replansInFlight,
        stopReason: stop.reason(),
      });
      switch (decision.kind) {
        case "retry":
          break;
        case "candidates":
          await recorder.record({
            type: "sub-task-escalated",
            subTaskId: id,
            step: "candidates",
            reason: decision.reason,
          });
          roundReason = "ladder";
          break;
        case "alternate-model":
          await recorder.record({
            type: "sub-task-escalated",
            subTaskId: id,
            step: "alternate-model",
            reason: decision.reason,
            agentModel: decision.model,
          });
          break;
        case "replan": {
          this.replansInFlight++;
          let outcome: Awaited<ReturnType<typeof replanStep>>;
          try {
            outcome = await replanStep(this.ctx, id, entry, decision.reason);
          } finally {
            this.replansInFlight--;
          }
          if (outcome.cancelled) return this.stopRunning(s);
          if (outcome.failed !== undefined)
            await this.fail(
              s,
              `${decision.reason} ${outcome.failed}`,
              outcome.code ?? "replan-failed",
              outcome.usage,
            );
          return;
        }
        case "fail":
          return this.fail(s, decision.reason, decision.code);
      }
      await recorder.record({
        type: "sub-task-retrying",
        subTaskId: id,
        // The number it will run as: after a round, past every candidate's.
        attempt: s.attempts + 1,
        feedback: entry.feedback,
      });
      previous = s.previous;
      current = undefined;
      retrying = true;
    }
  }

  /**
   * Judges an attempt in its directory and records the verdict (and, in a worktree, its commit).
   * `commit` is the attempt's work (the sub-task's `workFrom` unless a candidate's).
   */
  async evaluate(
    s: SubTaskState,
    current: Judged,
    commit: string | undefined = s.workFrom,
  ): Promise<ProgressEntry> {
    const { recorder, stop } = this.ctx;
    // A resumed run judges an attempt that finished unjudged in a worktree made from its commit.
    const opened = current.space
      ? { ok: true as const, space: current.space }
      : await openSpace(this.ctx, s, current.attempt, commit, stop.signal);
    const space = opened.ok ? opened.space : undefined;
    try {
      const entry = await evaluateAttempt(
        this.ctx,
        s,
        current.attempt,
        current.result,
        space?.cwd ?? this.ctx.input.cwd,
      );
      const final = await finalCommit(this.ctx, s, current.attempt, entry, commit);
      await recorder.record({
        type: "sub-task-evaluated",
        subTaskId: s.subTask.id,
        attempt: current.attempt,
        entry,
        ...(final ? { commit: final } : {}),
      });
      return entry;
    } finally {
      await space?.dispose();
    }
  }

  /**
   * Builds the attempt's prompt, announces it, runs it in its directory and records how it ended.
   * A candidate names its round, its model and the round's start.
   */
  async runAttempt(
    s: SubTaskState,
    attempt: number,
    previous: SubTaskState["previous"],
    adoptedFrom?: string,
    candidate?: CandidateStart,
    ticket?: GovernorTicket,
  ): Promise<{ result: AttemptResult; space?: AttemptSpace }> {
    const { input, settings, state, recorder, stop } = this.ctx;
    const { subTask } = s;
    const agentModel = candidate ? candidate.agentModel : s.agentModel;
    const prompt = buildSubTaskPrompt({
      request: input.request,
      subTask,
      context: dependencyContextFor(state, subTask, settings.contextTokenBudget),
      requestTokens: requestTokensInPrompt,
      facts: state.facts,
      ...(previous ? { previous } : {}),
    });
    const from =
      adoptedFrom ??
      (this.ctx.workspace.record.kind === "worktree"
        ? candidate
          ? candidate.from
          : (s.workFrom ?? state.tip)
        : undefined);
    // Attempt numbers only grow, in the log too, so no attempt is ever dispatched twice; an
    // adopted attempt was announced by the process that started it.
    if (!adoptedFrom)
      await recorder.record({
        type: "sub-task-started",
        subTaskId: subTask.id,
        attempt,
        promptTokens: estimateTokens(prompt),
        ...(agentModel ? { agentModel } : {}),
        ...(from ? { from } : {}),
        ...(candidate
          ? {
              candidate: {
                round: candidate.round,
                ...(candidate.replaces === undefined ? {} : { replaces: candidate.replaces }),
              },
            }
          : {}),
      });
    const started = performance.now();
    const opened = await openSpace(this.ctx, s, attempt, from, stop.signal);
    let result = opened.ok
      ? await this.execute(
          prompt,
          s,
          attempt,
          opened.space.cwd,
          agentModel,
          candidate?.round,
          ticket,
        )
      : failedResult(opened.error, stop.signal.aborted, started);
    if (!opened.ok) ticket?.release();
    let commit: string | undefined;
    if (opened.ok) ({ result, commit } = await captureWork(s, attempt, opened.space, result));
    await recorder.record({
      type: "attempt-finished",
      subTaskId: subTask.id,
      attempt,
      result,
      ...(commit ? { commit } : {}),
    });
    // The pause its limit began is logged after the attempt's end: a resume never finds it in flight.
    await this.limitOutcomes.get(`${subTask.id}\0${attempt}`)?.record();
    return { result, ...(opened.ok ? { space: opened.space } : {}) };
  }

  /** Runs the executor; a throw becomes an `error` attempt so one crash never ends the run. */
  private async execute(
    prompt: string,
    s: SubTaskState,
    attempt: number,
    cwd: string,
    agentModel: string | undefined,
    round: number | undefined,
    held?: GovernorTicket,
  ): Promise<AttemptResult> {
    const { options, recorder, stop, limits, settings } = this.ctx;
    const subTaskId = s.subTask.id;
    const started = performance.now();
    const key = agentKey(agentModel);
    let ticket: GovernorTicket | undefined = held;
    try {
      // Its provider may have paused since the sub-task looked: the place is taken here.
      ticket ??= await limits.acquire(key);
    } catch (error) {
      this.ctx.gate?.reached(s.subTask.id);
      return failedResult(error, stop.signal.aborted, started);
    }
    this.ctx.gate?.reached(s.subTask.id);
    try {
      const ran = await options.executor.run(prompt, {
        subTask: s.subTask,
        runId: this.ctx.input.runId,
        attempt,
        cwd,
        ...(agentModel ? { agentModel } : {}),
        ...(round === undefined ? {} : { candidate: { round } }),
        abortSignal: stop.signal,
        onEvent: (event) => {
          void recorder.record({ type: "agent-event", subTaskId, attempt, event });
          // The provider answered: its governor may let the next start in.
          if (event.type === "step-finish") ticket?.answered();
          // Stored, unlike the event: a session a crash kills still has its tokens counted.
          if (event.type === "step-finish" && event.usage && totalTokens(event.usage) > 0)
            void recorder.record({ type: "attempt-step", subTaskId, attempt, usage: event.usage });
        },
        onProcess: (process) => {
          void recorder.record({ type: "attempt-process", subTaskId, attempt, ...process });
        },
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      });
      const result = checkAttemptResult(ran, agentModel ?? "the executor's agent model");
      if (result.outcome === "rate-limited" && !stop.signal.aborted) {
        // Paused before its place is given back, so no waiting start slips in first.
        const outcome = await limits.attemptLimited(
          s,
          attempt,
          agentModel,
          result,
          settings.alternateAgentModels[s.alternatesUsed] !== undefined,
        );
        this.limitOutcomes.set(`${subTaskId}\0${attempt}`, outcome);
      } else if (result.outcome === "finished") ticket.answered();
      return result;
    } catch (error) {
      return failedResult(error, stop.signal.aborted, started);
    } finally {
      ticket.release();
    }
  }

  stopRunning(s: SubTaskState, result?: AttemptResult): Promise<void> {
    const { stop } = this.ctx;
    let reason = stop.cancelled
      ? "The run was cancelled while this sub-task was running."
      : `Stopped while running: ${stop.reason() ?? "the run stopped"}.`;
    if (result?.finalText) reason += ` Last output: ${result.finalText.slice(0, 200)}`;
    return this.ctx.recorder.record({
      type: "sub-task-cancelled",
      subTaskId: s.subTask.id,
      reason,
    });
  }

  /** The run began stopping between a retry's announcement and its start. */
  private stoppedBeforeRetry(s: SubTaskState): Promise<void> {
    const { stop } = this.ctx;
    if (stop.cancelled) {
      return this.ctx.recorder.record({
        type: "sub-task-cancelled",
        subTaskId: s.subTask.id,
        reason: "The run was cancelled before this sub-task's retry started.",
      });
    }
    return this.fail(
      s,
      `Incomplete after ${s.attempts} attempt(s); not retried because ${stop.reason() ?? "the run stopped"}.`,
      "run-stopping",
    );
  }

  async fail(s: SubTaskState, reason: string, code: SubTaskFailure, usage?: Usage): Promise<void> {
    await this.ctx.recorder.record({
      type: "sub-task-failed",
      subTaskId: s.subTask.id,
      attempts: s.attempts,
      reason,
      code,
      ...(usage && totalTokens(usage) > 0 ? { usage } : {}),
    });
    await this.skipDependents(s.subTask.id);
  }

  /** Skips every sub-task downstream of `failedId`; independent branches go on. */
  async skipDependents(failedId: string): Promise<void> {
    const { state, recorder } = this.ctx;
    const frontier = [failedId];
    for (let id = frontier.shift(); id !== undefined; id = frontier.shift()) {
      for (const dependent of state.dependents.get(id) ?? []) {
        const s = state.subTasks.get(dependent);
        if (s?.status !== "pending") continue;
        const blockedBy = [...new Set(s.subTask.dependsOn)].filter((dep) => {
          const status = state.subTasks.get(dep)?.status;
          return status === "failed" || status === "skipped";
        });
        frontier.push(dependent);
        await recorder.record({
          type: "sub-task-skipped",
          subTaskId: dependent,
          reason: `Depends on ${blockedBy.join(", ")}, which did not complete.`,
          blockedBy,
        });
      }
    }
  }
}

/** An attempt that could not run or threw: `cancelled` when the run's signal caused it. */
function failedResult(error: unknown, aborted: boolean, started: number): AttemptResult {
  const cancelled = aborted && isAbortError(error);
  return {
    outcome: cancelled ? "cancelled" : "error",
    finalText: "",
    toolCalls: [],
    stepFinishReasons: [],
    filesChanged: [],
    usage: emptyUsage(),
    error: cancelled ? "aborted" : describeError(error),
    ...(cancelled ? {} : { infrastructureError: true }),
    ...(ExecutorError.isInstance(error) && !error.isRetryable ? { retryable: false } : {}),
    durationMs: performance.now() - started,
  };
}
