import { outcomeEvaluator } from "../attempt/outcome-evaluator.js";
import { describeError } from "../errors/describe-error.js";
import {
  InvalidConfigError,
  PlanValidationError,
  StructuredOutputError,
} from "../errors/errors.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import { type TaskLedger, validateTaskLedger } from "../ledger/task-ledger.js";
import { currentLedger, pendingDownstream, type SubTaskState } from "../log/run-state.js";
import type { LanguageModel } from "../ports/model.js";
import type { RunContext } from "../run/run-context.js";
import { emptyUsage, type Usage } from "../usage/usage.js";
import { askReviewer } from "./ask-reviewer.js";
import { exploreProject } from "./explore-project.js";
import { planRequest, shouldDecompose } from "./planner.js";
import { replanSubTask } from "./replanner.js";

/** Plans the request (or takes the host's plan), records it and has it reviewed. */
export async function planRun(ctx: RunContext): Promise<void> {
  const { input, settings, state } = ctx;
  const { maxSubTasks } = settings;
  await digestProject(ctx);
  const hostPlan = input.plan ?? state.hostPlan;
  if (hostPlan !== undefined) {
    const ledger = validateTaskLedger(hostPlan, { maxSubTasks });
    const usage = input.planUsage ?? emptyUsage();
    await ctx.recorder.record({
      type: "plan-created",
      ledger,
      decomposed: true,
      repaired: false,
      usage,
    });
  } else {
    if (ctx.options.model && shouldDecompose(ctx.options.decompose, input.request)) {
      await exploreProject(ctx);
    }
    const result = await planRequest({
      model: ctx.options.model,
      request: input.request,
      maxSubTasks,
      decompose: ctx.options.decompose,
      abortSignal: ctx.stop.signal,
      project: state.project?.text,
      findings: state.explore?.finished?.findings,
    });
    await ctx.recorder.record({
      type: "plan-created",
      ledger: result.ledger,
      decomposed: result.decomposed,
      repaired: result.repaired,
      usage: result.usage,
    });
  }
  ctx.planned?.(currentLedger(state));
  await ctx.stop.checkSpendBudgets();
  await reviewPlan(ctx, "plan", currentLedger(state));
}

/** Bounds the digest: a project it cannot read in this long is planned without one. */
const digestTimeoutMs = 20_000;

/**
 * Reads the project once per run, before planning (a resumed run keeps the logged digest). A
 * digest that fails or takes too long costs the plan its project view, never the run.
 */
async function digestProject(ctx: RunContext): Promise<void> {
  const source = ctx.options.project;
  if (!source || ctx.state.project) return;
  const started = performance.now();
  const timeout = AbortSignal.timeout(digestTimeoutMs);
  try {
    const digest = await source.digest(ctx.input.cwd, {
      abortSignal: AbortSignal.any([ctx.stop.signal, timeout]),
    });
    const { cached, ...logged } = digest as typeof digest & { cached?: boolean };
    await ctx.recorder.record({
      type: "project-digested",
      digest: logged,
      durationMs: Math.round(performance.now() - started),
      cached: cached === true,
    });
  } catch (error) {
    if (ctx.stop.signal.aborted) throw error;
  }
}

/**
 * Asks the host's `reviewPlan`, when there is one; the request and the answer are both logged,
 * so a run that stops while waiting asks again when resumed. Returns the ledger to run, or
 * `undefined` when the review rejected it.
 */
export async function reviewPlan(
  ctx: RunContext,
  kind: "plan" | "replan",
  ledger: TaskLedger,
  change: { replaced: string[]; reason: string } | undefined = undefined,
): Promise<TaskLedger | undefined> {
  checkChecksRun(ctx, ledger);
  const hook = ctx.input.reviewPlan ?? ctx.options.reviewPlan;
  if (!hook) return ledger;
  await ctx.recorder.record({ type: "plan-review-requested", kind, ledger, ...(change ?? {}) });
  const decision = await askReviewer(
    hook,
    { runId: ctx.input.runId, request: ctx.input.request, kind, ledger, ...(change ?? {}) },
    ctx.stop.signal,
    (edited) => {
      const valid = validateTaskLedger(edited, { maxSubTasks: ctx.settings.maxSubTasks });
      if (kind === "replan") checkKeepsCompleted(ctx, valid);
      checkChecksRun(ctx, valid);
      return valid;
    },
  );
  if (decision.action === "reject") {
    const reason = decision.reason ?? "rejected in review";
    await ctx.recorder.record({ type: "plan-reviewed", kind, action: "reject", reason });
    return undefined;
  }
  await ctx.recorder.record({
    type: "plan-reviewed",
    kind,
    action: decision.action,
    ledger: decision.ledger,
  });
  return decision.ledger;
}

/**
 * Core's default evaluator (`outcomeEvaluator`) runs no declared check: a plan that declares
 * some would pass them unrun, so it is refused before any attempt, saying what evaluator to give.
 */
function checkChecksRun(ctx: RunContext, ledger: TaskLedger): void {
  if (ctx.options.evaluator !== outcomeEvaluator) return;
  const withChecks = ledger.subTasks.filter((s) => s.checks.length > 0).map((s) => s.id);
  if (withChecks.length === 0) return;
  throw new InvalidConfigError(
    `The plan declares checks (sub-task(s) ${withChecks.join(", ")}) but this manager's evaluator ` +
      "runs none (core's default outcomeEvaluator): give `evaluator: createEvaluator({ model })` " +
      "from @taskledger/evaluator, or use `createManager` from taskledger, which does.",
  );
}

/** A replan may change what is left to do, never drop what is done. */
function checkKeepsCompleted(ctx: RunContext, ledger: TaskLedger): void {
  const ids = new Set(ledger.subTasks.map((s) => s.id));
  const dropped = [...ctx.state.subTasks.values()].filter(
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

/**
 * The last step of the ladder: replace the failed sub-task and its dependents with new sub-tasks
 * from the model, keeping completed work. Resolves with `failed: undefined` when the plan was
 * revised, with why it was not (the call failed, the review rejected it) and what that cost, or
 * with `cancelled` when the host cancelled the run meanwhile (the replan is asked about on resume).
 */
export async function replanStep(
  ctx: RunContext,
  subTaskId: string,
  entry: ProgressEntry,
  reason: string,
): Promise<{
  failed: string | undefined;
  code: "replan-rejected" | "replan-failed" | undefined;
  usage: Usage;
  cancelled?: true;
}> {
  const { state, recorder } = ctx;
  const model = ctx.options.model;
  const failed = state.subTasks.get(subTaskId)!;
  if (!model)
    return { failed: "No model to replan with.", code: "replan-failed", usage: emptyUsage() };
  // A replan proposed before a restart and still waiting for review is asked about, not remade.
  const proposed = state.replanReview?.replaced[0] === subTaskId ? state.replanReview : undefined;
  const replaced = proposed?.replaced ?? [subTaskId, ...pendingDownstream(state, subTaskId)];
  if (!proposed) {
    await recorder.record({ type: "sub-task-escalated", subTaskId, step: "replan", reason });
  }
  let revised: TaskLedger;
  let usage = emptyUsage();
  try {
    const result = proposed
      ? { ledger: proposed.ledger, usage }
      : await askForReplan(ctx, model, failed, entry, replaced);
    usage = result.usage;
    const reviewed = await reviewPlan(ctx, "replan", result.ledger, { replaced, reason });
    if (!reviewed) {
      return {
        failed: "A replan was proposed and rejected in review.",
        code: "replan-rejected",
        usage,
      };
    }
    revised = reviewed;
  } catch (error) {
    const spent = StructuredOutputError.isInstance(error) || PlanValidationError.isInstance(error);
    if (spent && error.usage) usage = error.usage;
    // A host that quits while the replan is made or reviewed resumes to it, not to a failure.
    if (ctx.stop.cancelled) return { failed: undefined, code: undefined, usage, cancelled: true };
    if (ctx.stop.signal.aborted) {
      return { failed: "The run stopped while replanning.", code: "replan-failed", usage };
    }
    return { failed: `Replanning failed: ${describeError(error)}`, code: "replan-failed", usage };
  }
  const added = revised.subTasks.filter((s) => !state.subTasks.has(s.id)).map((s) => s.id);
  await recorder.record({
    type: "plan-revised",
    ledger: revised,
    replaced,
    added,
    reason: `Replanned after ${failed.attempts} attempt(s) of ${subTaskId}: ${reason}`,
    usage,
  });
  await ctx.stop.checkSpendBudgets();
  ctx.schedule(added.filter((id) => state.subTasks.get(id)?.waitingOn === 0));
  return { failed: undefined, code: undefined, usage: emptyUsage() };
}

function askForReplan(
  ctx: RunContext,
  model: LanguageModel,
  failed: SubTaskState,
  entry: ProgressEntry,
  replaced: string[],
) {
  const { state } = ctx;
  return replanSubTask({
    model,
    request: ctx.input.request,
    ledger: currentLedger(state),
    progress: new Map(
      [...state.subTasks].map(([id, s]) => [
        id,
        {
          status: s.status,
          outputData: s.status === "completed" ? (s.entry?.outputData ?? "") : "",
        },
      ]),
    ),
    failed: failed.subTask,
    attempts: failed.attempts,
    lastEntry: entry,
    replaced,
    usedIds: new Set(state.subTasks.keys()),
    maxSubTasks: ctx.settings.maxSubTasks,
    abortSignal: ctx.stop.signal,
    project: state.project?.text,
  });
}
