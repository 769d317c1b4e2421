import { describeError } from "../errors/describe-error.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { CandidateOutcome, CandidateRoundReason } from "../log/run-events.js";
import type { CandidateMember, SubTaskState } from "../log/run-state.js";
import type { AttemptResult } from "../ports/executor.js";
import type { AttemptSpace } from "../ports/workspace.js";
import type { RunContext } from "../run/run-context.js";
import { oneLine } from "../text/text-clip.js";
import { addUsage, emptyUsage } from "../usage/usage.js";
import { chooseCandidate, type JudgedCandidate, ruleChoice } from "./candidate-judge.js";

// Characters of one candidate's diff fetched for the judge: enough to find where large ones differ;
// its prompt share then shows those places (candidate-diff-view.ts) or clips it.
const diffChars = 1_000_000;

/** What a candidate's attempt needs besides an ordinary one's. */
export interface CandidateStart {
  round: number;
  agentModel: string | undefined;
  from: string | undefined;
  /** The attempt a stopped process never saw finish, which this one runs again. */
  replaces?: number;
}

export type Judged = {
  attempt: number;
  result: AttemptResult;
  entry?: ProgressEntry;
  space?: AttemptSpace;
};

/** What a round needs of the sub-task runner: an attempt run, and one judged. */
export interface AttemptRunner {
  runAttempt(
    s: SubTaskState,
    attempt: number,
    previous: SubTaskState["previous"],
    adoptedFrom: undefined,
    candidate: CandidateStart,
  ): Promise<{ result: AttemptResult; space?: AttemptSpace }>;
  evaluate(s: SubTaskState, current: Judged, commit: string | undefined): Promise<ProgressEntry>;
}

/** How a round ended: its choice is recorded, or the run stopped before it could be made. */
export type RoundOutcome = "chosen" | "stopped";

/** Why a sub-task's next try is a new round of candidates, if it is. */
export function firstRoundReason(
  ctx: RunContext,
  s: SubTaskState,
): CandidateRoundReason | undefined {
  const bestOf = ctx.settings.bestOf;
  if (!bestOf || s.attempts > 0 || s.round || s.inFlight) return undefined;
  if (bestOf.for === "all") return "all";
  return s.subTask.risky ? "risky" : undefined;
}

/** True when the sub-task has a round whose choice is not made yet (a resumed run's). */
export function roundUnchosen(s: SubTaskState): boolean {
  return s.round !== undefined && s.round.chosen === undefined;
}

/**
 * The complete candidate next in line when the round's winner `failed` could not land: most checks
 * passed, then the earlier attempt (the tie rule's order), never one that already gave way.
 */
export function roundRunnerUp(s: SubTaskState, failed: number): number | undefined {
  const round = s.round;
  if (!round?.chosen || round.chosen.winner !== failed) return undefined;
  const passed = (m: CandidateMember) => m.entry!.evidence.filter((e) => e.passed).length;
  const next = round.members
    .filter(
      (m) =>
        m.attempt !== failed &&
        m.entry?.completed &&
        m.result &&
        m.commit &&
        !(round.gaveWay ?? []).includes(m.attempt),
    )
    .sort((a, b) => passed(b) - passed(a) || a.attempt - b.attempt)[0];
  return next?.attempt;
}

/**
 * Runs a round of parallel candidates of one sub-task from one commit, judges each, and records
 * the choice. `reason` starts a new round; without it the sub-task's unchosen round goes on, its
 * finished candidates neither run nor judged again.
 */
export async function runCandidateRound(
  ctx: RunContext,
  runner: AttemptRunner,
  s: SubTaskState,
  reason: CandidateRoundReason | undefined,
): Promise<RoundOutcome> {
  const { settings, state, recorder, stop } = ctx;
  const bestOf = settings.bestOf;
  if (reason !== undefined) {
    await stop.checkSpendBudgets();
    if (stop.stopping() || !bestOf) return "stopped";
    const models = bestOf.models;
    const round = (s.rounds.at(-1)?.round ?? 0) + 1;
    await recorder.record({
      type: "candidates-started",
      subTaskId: s.subTask.id,
      round,
      reason,
      ...(state.tip ? { from: state.tip } : {}),
      candidates: Array.from({ length: bestOf.candidates }, (_, i) => {
        const agentModel = models.length > 0 ? models[i % models.length] : s.agentModel;
        return { attempt: s.attempts + 1 + i, ...(agentModel ? { agentModel } : {}) };
      }),
    });
  }
  const round = s.round!;
  const previous = s.previous;
  // Numbers are taken before any await, so two candidates run again never share one; one a
  // stopped process started runs again under a new number, never an old one twice.
  let next = s.attempts;
  const starts = round.members.map((member) => {
    if (member.result) return undefined;
    if (member.inFlight === undefined) return { attempt: member.attempt };
    return { attempt: ++next, replaces: member.attempt };
  });
  const firstStart = starts.findIndex((start) => start !== undefined);
  await Promise.all(
    round.members.map(async (member, i) => {
      const start = starts[i];
      if (start) {
        // Siblings first, then candidates: an extra one waits for the sub-tasks dispatched before.
        if (i > firstStart) await ctx.gate?.othersStarted(s.subTask.id, stop.signal);
        // A spent budget stops candidates from starting, not those already running.
        await stop.checkSpendBudgets();
        if (stop.stopping()) return;
        const { result, space } = await runner.runAttempt(s, start.attempt, previous, undefined, {
          round: round.round,
          agentModel: member.agentModel,
          from: round.from,
          ...(start.replaces === undefined ? {} : { replaces: start.replaces }),
        });
        if (stop.signal.aborted) {
          await space?.dispose();
          return;
        }
        await runner.evaluate(
          s,
          { attempt: start.attempt, result, ...(space ? { space } : {}) },
          member.commit,
        );
      } else if (!member.entry && member.result) {
        await runner.evaluate(s, { attempt: member.attempt, result: member.result }, member.commit);
      }
      await stop.checkSpendBudgets();
    }),
  );
  if (stop.signal.aborted) return "stopped";
  const judged = round.members.filter((m) => m.entry && m.result);
  if (judged.length === 0) return "stopped";
  await choose(ctx, s, judged);
  return "chosen";
}

/** Asks the comparative judge (when more than one is complete) and records the round's choice. */
async function choose(ctx: RunContext, s: SubTaskState, judged: CandidateMember[]): Promise<void> {
  const { workspace, recorder, stop, options, input } = ctx;
  const round = s.round!;
  const complete = judged.filter((m) => m.entry!.completed);
  let winner: number | undefined;
  let by: "judge" | "rule" | "single" | "none";
  let why: string;
  let usage = emptyUsage();
  const losers = new Map<number, string>();
  if (complete.length === 0) {
    by = "none";
    why = `No candidate of ${judged.length} was complete.`;
    for (const m of judged)
      losers.set(m.attempt, `Incomplete: ${oneLine(m.entry!.feedback || m.entry!.summary, 300)}`);
  } else if (complete.length === 1) {
    by = "single";
    winner = complete[0]!.attempt;
    why = "The only complete candidate.";
  } else {
    const candidates = await Promise.all(complete.map((m) => shown(ctx, round.from, m)));
    const choice = await chooseCandidate({
      model: options.model,
      request: input.request,
      subTask: s.subTask,
      candidates,
      abortSignal: stop.signal,
    }).catch((error) => {
      if (stop.signal.aborted) throw error;
      return ruleChoice(candidates, `The judge failed: ${describeError(error)}`);
    });
    ({ winner, by, reason: why, usage } = choice);
    for (const [attempt, lost] of choice.losers) losers.set(attempt, lost);
  }
  for (const m of judged) {
    if (m.attempt !== winner && !losers.has(m.attempt))
      losers.set(m.attempt, `Incomplete: ${oneLine(m.entry!.feedback || m.entry!.summary, 300)}`);
  }
  const outcomes: CandidateOutcome[] = [];
  for (const m of round.members) {
    const spent = s.attemptUsage.find((a) => a.attempt === m.attempt);
    const ref = m.commit
      ? await workspace
          .keep?.({ subTaskId: s.subTask.id, attempt: m.attempt, commit: m.commit })
          .catch(() => undefined)
      : undefined;
    outcomes.push({
      attempt: m.attempt,
      ...(m.agentModel ? { agentModel: m.agentModel } : {}),
      ...(m.commit ? { commit: m.commit } : {}),
      ...(ref ? { ref } : {}),
      completed: m.entry?.completed === true,
      ...(m.attempt === winner
        ? {}
        : { lost: losers.get(m.attempt) ?? "It did not run: the run stopped starting work." }),
      usage: spent ? addUsage(spent.agent, spent.evaluation) : emptyUsage(),
    });
  }
  // Those a stopped process never saw finish stay in the report, with what their sessions spent.
  for (const r of round.replaced ?? []) {
    const spent = s.attemptUsage.find((a) => a.attempt === r.attempt);
    outcomes.push({
      attempt: r.attempt,
      ...(r.agentModel ? { agentModel: r.agentModel } : {}),
      completed: false,
      lost: `Interrupted: the manager process stopped while it ran; attempt ${r.by} ran it again.`,
      replacedBy: r.by,
      usage: spent ? addUsage(spent.agent, spent.evaluation) : emptyUsage(),
    });
  }
  outcomes.sort((a, b) => a.attempt - b.attempt);
  await recorder.record({
    type: "candidates-chosen",
    subTaskId: s.subTask.id,
    round: round.round,
    ...(winner === undefined ? {} : { winner }),
    by,
    reason: why,
    candidates: outcomes,
    usage,
  });
}

/** A complete candidate as the judge sees it: its evaluation and its change from the round's start. */
async function shown(
  ctx: RunContext,
  from: string | undefined,
  m: CandidateMember,
): Promise<JudgedCandidate> {
  const { workspace, stop } = ctx;
  let diff = { text: "(the change could not be read)", linesChanged: 0 };
  if (from && m.commit && workspace.diff) {
    diff = await workspace
      .diff({ from, commit: m.commit, maxChars: diffChars }, stop.signal)
      .catch((error) => ({
        text: `(the change could not be read: ${describeError(error)})`,
        linesChanged: 0,
      }));
  }
  return {
    attempt: m.attempt,
    ...(m.agentModel ? { agentModel: m.agentModel } : {}),
    entry: m.entry!,
    diff,
  };
}
