import PQueue from "p-queue";
import { stopProjectBaseline } from "../attempt/project-baseline.js";
import { errorInfo } from "../errors/describe-error.js";
import {
  InvalidConfigError,
  InvalidRequestError,
  isAbortError,
  StoreError,
  TaskLedgerError,
} from "../errors/errors.js";
import { ProviderLimits } from "../governor/provider-limits.js";
import { closeOut } from "../integration/close-out.js";
import { IntegrationGate } from "../integration/integration-gate.js";
import { type TaskLedger, validateTaskLedger } from "../ledger/task-ledger.js";
import { createRunState, currentLedger, type RunState } from "../log/run-state.js";
import { planRun, reviewPlan } from "../plan/plan-steps.js";
import type { RunWorkspace } from "../ports/workspace.js";
import { buildReport } from "../report/build-report.js";
import type { RunReport } from "../report/run-report.js";
import { recordPreparations } from "../workspace/attempt-workspace.js";
import { DispatchGate } from "./dispatch-gate.js";
import type { EventHub } from "./event-hub.js";
import type { ResolvedManagerOptions } from "./manager-options.js";
import { pathsOverlap } from "./path-overlap.js";
import type { RunContext, RunInput } from "./run-context.js";
import { RunRecorder } from "./run-recorder.js";
import { StopConditions } from "./stop-conditions.js";
import { SubTaskRunner } from "./sub-task-runner.js";
import { checkWorkingDirectory } from "./working-directory.js";

export type { RunInput } from "./run-context.js";

/** Where a run's live state is published for `TaskRun.snapshot`. */
export interface LiveState {
  state: RunState | undefined;
}

/** One run of the manager loop: plan, dispatch, execute, evaluate, retry, report. */
export async function executeRun(
  options: ResolvedManagerOptions,
  given: Omit<RunInput, "cwd"> & { cwd: string | undefined },
  hub: EventHub,
  live: LiveState = { state: undefined },
): Promise<RunReport> {
  const input = given as RunInput;
  const state = input.recovered ?? createRunState(input.runId);
  live.state = state;
  let stop: StopConditions | undefined;
  const recorder = new RunRecorder(state, options.store, hub, (error) => stop?.abort(error));
  stop = new StopConditions(recorder, input.settings.budget);
  const limits = new ProviderLimits(recorder, stop, input.settings.concurrency);
  // The manager's own calls wait out their provider's limits as the attempts do.
  const governed: ResolvedManagerOptions = options.model
    ? { ...options, model: limits.governed(options.model) }
    : options;
  const startedAt = new Date();
  let release: (() => Promise<void>) | undefined;
  let workspace: RunWorkspace | undefined;
  try {
    // Checked before anything is logged or paid for: a bad directory fails every attempt alike.
    input.cwd = await checkWorkingDirectory(given.cwd);
    // A `required` sandbox that cannot work here fails the run before anything is paid for.
    await options.sandbox?.status();
    // Claimed before the first record, so another process cannot run this run at the same time.
    release = await options.store.lock?.(input.runId);
    if (!input.recovered && (await options.store.read(input.runId)).length > 0) {
      throw new InvalidRequestError(
        `Run "${input.runId}" already exists in the store: resume it, or start a run with a new id.`,
      );
    }
    stop.start(input.abortSignal);
    workspace = await options.workspaces.open({
      runId: input.runId,
      cwd: input.cwd,
      isolation: options.isolation,
      apply: options.apply,
      ...(input.recovered ? { recorded: { record: state.workspace, tip: state.tip } } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    });
    // Candidates of one sub-task at once in one directory would undo each other's work.
    if (input.settings.bestOf && workspace.record.kind !== "worktree") {
      throw new InvalidConfigError(
        '`bestOf` runs candidates side by side, each in its own git worktree: run in a git repository with worktrees (isolation "worktree" or "auto"), or leave `bestOf` out.',
      );
    }
    return await loop(
      {
        options: governed,
        input,
        settings: input.settings,
        state,
        recorder,
        stop,
        workspace,
        limits,
      },
      startedAt,
    );
  } catch (error) {
    if (TaskLedgerError.isInstance(error)) error.runId ??= input.runId;
    // Only a log this session wrote to gets the failure: never someone else's, never a new one.
    if (!StoreError.isInstance(error) && recorder.recorded > 0) {
      await recorder.record({ type: "run-failed", error: errorInfo(error) }).catch(() => {});
    } else if (recorder.recorded === 0) {
      recorder.announce({ type: "run-failed", error: errorInfo(error) });
    }
    throw error;
  } finally {
    stop.dispose();
    limits.close();
    // Worktrees never outlive the run, however it ended; commits stay under refs/taskledger/.
    await workspace?.close().catch(() => {});
    await release?.().catch(() => {});
  }
}

async function loop(base: Omit<RunContext, "schedule">, startedAt: Date): Promise<RunReport> {
  const { input, state, recorder, stop } = base;
  // Each completion only looks at its own dependents, so dispatch stays linear in the graph.
  const queue = new PQueue({ concurrency: base.settings.concurrency });
  const queued = new Set<string>();
  const gate = new DispatchGate();
  // Declared paths of the sub-tasks queued or running; one whose paths overlap them waits.
  const holding = new Map<string, readonly string[]>();
  const waiting: string[] = [];
  const clash = (paths: readonly string[]) =>
    paths.length > 0 && [...holding.values()].some((held) => pathsOverlap(held, paths));
  const enqueue = (id: string) => {
    const paths = state.subTasks.get(id)?.subTask.paths ?? [];
    if (clash(paths)) {
      waiting.push(id);
      return;
    }
    if (paths.length > 0) holding.set(id, paths);
    void queue.add(async () => {
      gate.dispatched(id);
      try {
        await runner.run(id);
      } finally {
        gate.reached(id);
        holding.delete(id);
        // In the job, so the queue is not idle before what waited on these paths is queued.
        for (const next of waiting.splice(0)) {
          if (!stop.stopping() && state.subTasks.get(next)?.status === "pending") enqueue(next);
        }
      }
    });
  };
  const ctx: RunContext = {
    ...base,
    gate,
    schedule(ids) {
      for (const id of ids) {
        if (stop.stopping() || queued.has(id) || state.subTasks.get(id)?.status !== "pending")
          continue;
        queued.add(id);
        enqueue(id);
      }
    },
  };
  // Sub-tasks lending their slot while they wait (a provider's pause, the gate): each one lent
  // lets the queue start another; a lender takes a slot back only once fewer than `concurrency`
  // others hold one. Counted, not read from the queue: lenders are pending jobs too, and waiting
  // for a job to end while every pending job is a lender would wait for ever.
  let lenders = 0;
  const returning: (() => void)[] = [];
  const slotFreed = () => {
    for (const wake of returning.splice(0)) wake();
  };
  queue.addEventListener("next", slotFreed);
  const lend = async <T>(work: () => Promise<T>, takeBack: (value: T) => boolean): Promise<T> => {
    lenders++;
    queue.concurrency++;
    slotFreed();
    let value: T;
    try {
      value = await work();
      // Sub-tasks holding a slot now: the pending jobs but the lenders.
      if (takeBack(value))
        while (queue.pending - lenders >= base.settings.concurrency)
          await new Promise<void>((resolve) => returning.push(resolve));
    } finally {
      lenders--;
      queue.concurrency--;
    }
    return value;
  };
  ctx.lendSlot = (work) => lend(work, () => true);
  const integration = new IntegrationGate(ctx);
  ctx.integration = {
    // Work waiting at the gate needs no agent: its slot goes to the next sub-task meanwhile.
    async land(s, attempt, entry) {
      if (!integration.checksEach) return integration.land(s, attempt, entry);
      // Sent back, it retries: first a slot, so no more than `concurrency` attempts run at once.
      return lend(
        () => integration.land(s, attempt, entry),
        (landing) => !("landed" in landing && landing.landed),
      );
    },
  };
  const runner = new SubTaskRunner(ctx);
  const finish = async () => {
    // Nothing will use the baseline now: it is stopped, and its command with it.
    await stopProjectBaseline(ctx);
    return finishRun(ctx, startedAt);
  };
  let warmUp: WarmUp | undefined;
  try {
    if (input.recovered) await resumeFrom(ctx, runner);
    else {
      const sandbox = await base.options.sandbox?.status();
      await recorder.record({
        type: "run-started",
        request: input.request,
        cwd: input.cwd,
        settings: input.settings,
        ...(sandbox ? { sandbox } : {}),
        ...hostPlanRecord(input),
        workspace: base.workspace.record,
        ...(input.trace ? { trace: input.trace } : {}),
      });
    }
    // A missing agent or an unknown agent model fails every attempt alike: found before planning.
    if (hasWorkLeft(state)) {
      await base.options.executor.preflight?.({
        agentModels: base.settings.alternateAgentModels,
        abortSignal: stop.signal,
      });
      warmUp = prepareFirstSlot(ctx);
      ctx.planned = warmUp.planned;
    }
    if (!state.planned) await planRun(ctx);
    else if (state.planReviewPending) await reviewPlan(ctx, "plan", currentLedger(state));
    warmUp?.settle();
    await warmUp?.done;
  } catch (error) {
    warmUp?.settle();
    // Whatever planning threw once the host cancelled is the cancel's doing, not a failure.
    if (stop.cancelled && (isAbortError(error) || stop.signal.aborted)) {
      // A plan made while the first slot was prepared: its sub-tasks never started.
      await settleUnstarted(ctx);
      return finish();
    }
    // A failed setup stopped the planner: the setup's error is the run's.
    await warmUp?.done.catch(() => {});
    await stopProjectBaseline(ctx);
    if (warmUp?.error !== undefined) throw warmUp.error;
    throw error;
  }
  const ready = [...state.subTasks.values()].filter((s) => s.waitingOn === 0);
  ctx.schedule(ready.map((s) => s.subTask.id));
  await queue.onIdle();
  // The whole, verified: the final tip checked, the request judged; missing work runs on.
  while (await closeOut(ctx, integration)) await queue.onIdle();
  await stopProjectBaseline(ctx);
  recorder.throwIfFatal();
  await settleUnstarted(ctx);
  return finish();
}

interface WarmUp {
  /** Settles once the first slot is ready; rejects with `error`. */
  done: Promise<void>;
  error?: unknown;
  /** Warms for the plan's first wave, once it is known. */
  planned(ledger: TaskLedger): void;
  /** Planning ended without a plan: nothing more is warmed. */
  settle(): void;
}

// A planner that answers within this gets its first wave warmed, not the concurrency: the plan may
// be one sub-task. One that takes longer has its time used to warm the concurrency's worth.
const warmWhilePlanningAfterMs = 1500;

/**
 * Makes the first slot (the project's environment, a setup command) and warms the executor while
 * the planner thinks and the plan is reviewed: as many slots and agents as the first wave starts
 * when the plan is known (the host's, or once made), else one, and the concurrency's worth once
 * planning takes a while. A setup that fails stops the planner at once.
 */
function prepareFirstSlot(ctx: RunContext): WarmUp {
  const { workspace, stop, settings, options, state, input } = ctx;
  const known = knownFirstWave(ctx);
  const planning = known === undefined && !state.planned && !input.recovered;
  let target = 0;
  let prepared = false;
  const warm = (count: number) => {
    const capped = Math.min(settings.concurrency, Math.max(1, count));
    if (capped <= target || stop.signal.aborted) return;
    target = capped;
    options.executor.warm?.({
      count: capped,
      abortSignal: stop.signal,
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    });
    if (prepared) workspace.warm?.(capped, stop.signal);
  };
  warm(known ?? (planning ? 1 : settings.concurrency));
  const later = planning
    ? setTimeout(() => warm(settings.concurrency), warmWhilePlanningAfterMs)
    : undefined;
  later?.unref();
  const warmUp: WarmUp = {
    done: Promise.resolve(),
    settle: () => clearTimeout(later),
    planned(ledger) {
      clearTimeout(later);
      const firstWave = ledger.subTasks.filter((s) => s.dependsOn.length === 0).length;
      warm(firstWave * (settings.bestOf?.candidates ?? 1));
    },
  };
  warmUp.done = (async () => {
    try {
      await workspace.prepare?.(stop.signal);
    } catch (error) {
      warmUp.error = error;
      if (!stop.signal.aborted) stop.abort(error);
      throw error;
    } finally {
      await recordPreparations(ctx);
    }
    prepared = true;
    workspace.warm?.(target, stop.signal);
  })();
  // Awaited after planning; until then a failure is handled here, not unhandled.
  warmUp.done.catch(() => {});
  return warmUp;
}

/**
 * How many attempts the first wave starts, when the plan is the host's and nobody may change it
 * before it runs: its sub-tasks with no dependency. Undefined when not known yet (a planner's
 * plan, a plan review, candidates side by side, a resumed run).
 */
function knownFirstWave(ctx: RunContext): number | undefined {
  const { input, options, settings, state } = ctx;
  const plan = input.plan ?? state.hostPlan;
  if (plan === undefined || state.planned || input.recovered || settings.bestOf) return undefined;
  if (input.reviewPlan ?? options.reviewPlan) return undefined;
  try {
    const ledger = validateTaskLedger(plan, { maxSubTasks: settings.maxSubTasks });
    return Math.max(1, ledger.subTasks.filter((s) => s.dependsOn.length === 0).length);
  } catch {
    // The planning step reports a malformed plan.
    return undefined;
  }
}

/** A run not yet planned, or with a sub-task neither done nor given up on. */
function hasWorkLeft(state: RunState): boolean {
  if (!state.planned) return true;
  const settled = new Set(["completed", "failed", "skipped"]);
  return [...state.subTasks.values()].some((s) => !settled.has(s.status));
}

/** The host's plan, logged so a resume needs nothing else; an invalid one fails in planning. */
function hostPlanRecord(input: RunInput): { plan?: TaskLedger } {
  if (input.plan === undefined) return {};
  try {
    return { plan: validateTaskLedger(input.plan, { maxSubTasks: input.settings.maxSubTasks }) };
  } catch {
    return {};
  }
}

/** Continues the log of an earlier session: stops what it left running, then says so. */
async function resumeFrom(ctx: RunContext, runner: SubTaskRunner): Promise<void> {
  const { state, options, recorder } = ctx;
  // Attempts a stopped process never saw finish: ordinary ones and a round's candidates.
  const interrupted = [...state.subTasks.values()].flatMap((s) => [
    ...(s.inFlight ? [{ subTaskId: s.subTask.id, ...s.inFlight }] : []),
    ...(s.round && !s.round.chosen ? s.round.members : [])
      .filter((m) => m.inFlight)
      .map((m) => ({ subTaskId: s.subTask.id, attempt: m.attempt, ...m.inFlight! })),
  ]);
  const processes = interrupted.flatMap((a) => a.processes);
  if (processes.length > 0) await options.executor.reclaim?.(processes);
  await recorder.record({
    type: "run-resumed",
    interrupted: interrupted.map((a) => ({ subTaskId: a.subTaskId, attempt: a.attempt })),
    reclaimed: processes.length,
    ...(ctx.input.trace ? { trace: ctx.input.trace } : {}),
  });
  // A crash between a failure and the skips it implies leaves dependents to skip now.
  for (const s of [...state.subTasks.values()]) {
    if (s.status === "failed" || s.status === "skipped") await runner.skipDependents(s.subTask.id);
  }
}

/** Sub-tasks never started because the run was cancelled or a budget ran out. */
async function settleUnstarted(ctx: RunContext): Promise<void> {
  const { state, recorder, stop } = ctx;
  const why = stop.reason() ?? "the run stopped";
  for (const s of state.subTasks.values()) {
    if (s.status !== "pending") continue;
    if (stop.cancelled || state.planRejected !== undefined) {
      await recorder.record({
        type: "sub-task-cancelled",
        subTaskId: s.subTask.id,
        reason: stop.cancelled
          ? "The run was cancelled before this sub-task started."
          : `Not run: ${why}.`,
      });
      continue;
    }
    await recorder.record({
      type: "sub-task-skipped",
      subTaskId: s.subTask.id,
      reason: `Not started: ${why}.`,
      blockedBy: [],
    });
  }
}

/** The final tip's failing checks, named, when the gate found the combined result broken. */
function finalGateFailure(state: RunState): string | undefined {
  const final = state.integration.final;
  if (!final || final.passed) return undefined;
  return final.results
    .filter((r) => !r.passed)
    .map((r) => `\`${r.argv.join(" ")}\``)
    .join(", ");
}

async function finishRun(ctx: RunContext, startedAt: Date): Promise<RunReport> {
  const { recorder, stop, state, workspace } = ctx;
  recorder.throwIfFatal();
  // Slots made ahead that no attempt came to take are still said.
  await recordPreparations(ctx);
  // A cancelled run may be resumed: its branch is made and applied when it really ends.
  if (!stop.cancelled && state.planRejected === undefined) {
    const failing = finalGateFailure(state);
    const outcome = await workspace.finish({
      apply: workspace.record.kind === "worktree" && workspace.record.apply && !failing,
    });
    if (outcome) {
      // A tip that fails the gate's checks is never applied to the user's tree.
      const note =
        failing && !outcome.applied
          ? `Not applied: the combined result fails ${failing}. ${outcome.note.replace(/^Not applied \(--no-apply\): /, "")}`
          : outcome.note;
      await recorder.record({ type: "workspace-finished", ...outcome, note });
    }
  }
  const report = buildReport(state, {
    cancelled: stop.cancelled,
    stopReason: stop.reason(),
    startedAt,
    finishedAt: new Date(),
  });
  await recorder.record({ type: "run-finished", report });
  recorder.throwIfFatal();
  return report;
}
