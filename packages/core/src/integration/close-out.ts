import { isAbortError } from "../errors/errors.js";
import type { AcceptanceRound } from "../log/run-state.js";
import { currentLedger } from "../log/run-state.js";
import { planContinuation } from "../plan/continuation.js";
import { reviewPlan } from "../plan/plan-steps.js";
import type { LanguageModel } from "../ports/model.js";
import type { RunContext } from "../run/run-context.js";
import { oneLine } from "../text/text-clip.js";
import { judgeAcceptance } from "./acceptance.js";
import type { IntegrationGate } from "./integration-gate.js";

/**
 * Once every sub-task of the plan is done: the final tip is checked, then the request is judged as
 * a whole; what is missing is planned as new sub-tasks on top (within `acceptance.rounds` and the
 * budgets). True when new sub-tasks were scheduled and the run goes on.
 */
export async function closeOut(ctx: RunContext, gate: IntegrationGate): Promise<boolean> {
  const { state, stop } = ctx;
  if (stop.cancelled || state.planRejected !== undefined) return false;
  const live = [...state.subTasks.values()].filter((s) => s.status !== "replaced");
  try {
    // Whatever is applied is checked first: a partial run's tip and a budget-stopped one's too.
    const final = stop.signal.aborted ? undefined : await gate.checkFinal();
    if (final === "stopped" || (final && !final.passed)) return false;
    if (stop.stopping() || live.length === 0 || live.some((s) => s.status !== "completed"))
      return false;
    return await accept(ctx, live.length);
  } catch (error) {
    // A cancel during the final check or the acceptance: resumed, they are asked again.
    if (stop.signal.aborted && (isAbortError(error) || stop.cancelled)) return false;
    throw error;
  }
}

async function accept(ctx: RunContext, subTasks: number): Promise<boolean> {
  const { state, stop, recorder, settings, options } = ctx;
  const model = options.model;
  if (!settings.acceptance || !model) return false;
  // A plan of one sub-task was judged whole by its own judge.
  if (subTasks === 1 && state.acceptance.length === 0) return false;
  let last = state.acceptance.at(-1);
  // A verdict logged before a restart, with nothing completed since, is not asked again.
  if (!last || last.completedAt !== state.completionOrder.size) {
    const verdict = await judgeAcceptance(ctx, model);
    await recorder.record({
      type: "acceptance-judged",
      round: state.acceptance.length + 1,
      ...verdict,
    });
    await stop.checkSpendBudgets();
    last = state.acceptance.at(-1)!;
  }
  if (last.verdict !== "unsatisfied" || last.continued) return false;
  const continued = state.acceptance.filter((a) => a.continued).length;
  if (continued >= settings.acceptance.rounds || stop.stopping()) return false;
  return continueWith(ctx, model, last);
}

/** Plans the missing work as new sub-tasks, through the host's plan review as a replan is. */
async function continueWith(
  ctx: RunContext,
  model: LanguageModel,
  round: AcceptanceRound,
): Promise<boolean> {
  const { state, recorder, stop, settings } = ctx;
  const ledger = currentLedger(state);
  const reason = `The request is not met as a whole (acceptance round ${round.round}): missing ${round.missing.map((m) => oneLine(m.what, 200)).join("; ")}`;
  let planned: Awaited<ReturnType<typeof planContinuation>>;
  try {
    planned = await planContinuation({
      model,
      request: ctx.input.request,
      ledger,
      outputs: new Map([...state.subTasks].map(([id, s]) => [id, s.entry?.outputData ?? ""])),
      missing: round.missing,
      usedIds: new Set(state.subTasks.keys()),
      maxSubTasks: settings.maxSubTasks,
      abortSignal: stop.signal,
      project: state.project?.text,
    });
  } catch (error) {
    if (stop.signal.aborted) throw error;
    // No usable plan for the missing work: the run ends `partial`, naming it.
    return false;
  }
  const reviewed = await reviewPlan(ctx, "replan", planned.ledger, { replaced: [], reason });
  if (!reviewed) return false;
  const added = reviewed.subTasks.filter((s) => !state.subTasks.has(s.id)).map((s) => s.id);
  if (added.length === 0) return false;
  await recorder.record({
    type: "plan-revised",
    ledger: reviewed,
    replaced: [],
    added,
    reason,
    usage: planned.usage,
    acceptance: round.round,
  });
  await stop.checkSpendBudgets();
  ctx.schedule(added.filter((id) => state.subTasks.get(id)?.waitingOn === 0));
  return true;
}
