import type { Check } from "../ledger/sub-task.js";
import type { RunContext } from "../run/run-context.js";
import { outcomeEvaluator } from "./outcome-evaluator.js";

/** The attempt name the baseline's directory goes by. */
export const baselineId = "taskledger-baseline";

/** The project's test and typecheck commands, as checks (never its lint). */
export function projectCommandChecks(ctx: RunContext): Check[] {
  if (ctx.settings.projectChecks === false) return [];
  return (ctx.state.project?.commands ?? [])
    .filter((command) => command.kind !== "lint")
    .map((command) => ({ type: "command", argv: command.argv, timeoutMs: null }));
}

/**
 * Runs the project's commands once at the run's start commit, the first time an attempt is about
 * to be checked by them, and logs which pass: a command that already fails there (broken tests,
 * a watcher) would fail every sub-task alike, so it checks none. Only with worktrees (a shared
 * directory holds the attempts' changes already). Whatever goes wrong here costs only that
 * knowledge: every command is then used, as without a baseline.
 */
export async function awaitProjectBaseline(ctx: RunContext): Promise<void> {
  const { state, options, workspace } = ctx;
  if (state.baseline || workspace.record.kind !== "worktree") return;
  if (!options.evaluator.runChecks || options.evaluator === outcomeEvaluator) return;
  if (projectCommandChecks(ctx).length === 0) return;
  ctx.baseline ??= startProjectBaseline(ctx);
  await ctx.baseline.done;
}

/** Stops a baseline still running once nothing will use it (the run is ending). */
export async function stopProjectBaseline(ctx: RunContext): Promise<void> {
  ctx.baseline?.stop();
  await ctx.baseline?.done;
}

function startProjectBaseline(ctx: RunContext): { done: Promise<void>; stop(): void } {
  const controller = new AbortController();
  const signal = AbortSignal.any([ctx.stop.signal, controller.signal]);
  return { done: runProjectBaseline(ctx, signal), stop: () => controller.abort() };
}

async function runProjectBaseline(ctx: RunContext, signal: AbortSignal): Promise<void> {
  const { options, recorder, workspace } = ctx;
  const evaluator = options.evaluator;
  const checks = projectCommandChecks(ctx);
  if (!evaluator.runChecks) return;
  const started = performance.now();
  const base = workspace.record.kind === "worktree" ? workspace.record.base : undefined;
  try {
    const space = await workspace.attempt(
      { subTaskId: baselineId, attempt: 1, from: base },
      signal,
    );
    try {
      const runs = await evaluator.runChecks(checks, {
        cwd: space.cwd,
        abortSignal: signal,
        ...(options.executor.guard
          ? { guardProcess: options.executor.guard.bind(options.executor) }
          : {}),
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      });
      if (signal.aborted) return;
      await recorder.record({
        type: "project-baseline",
        results: checks.map((check, i) => ({
          argv: check.type === "command" ? check.argv : [],
          passed: runs[i]?.passed ?? true,
          detail: runs[i]?.detail ?? "",
        })),
        durationMs: Math.round(performance.now() - started),
      });
    } finally {
      await space.dispose().catch(() => {});
    }
  } catch {
    // Cancelled, or no directory to run in: the commands are used as they are.
  }
}
