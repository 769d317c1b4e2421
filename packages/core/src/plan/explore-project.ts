import { checkAttemptResult } from "../attempt/attempt-result-check.js";
import { describeError } from "../errors/describe-error.js";
import { AbortedError } from "../errors/errors.js";
import type { SubTask } from "../ledger/sub-task.js";
import type { AttemptResult } from "../ports/executor.js";
import type { RunContext } from "../run/run-context.js";
import { oneLine } from "../text/text-clip.js";
import { estimateTokens, truncateToTokens } from "../text/tokens.js";
import { emptyUsage } from "../usage/usage.js";

/** The exploration's name where an attempt's is asked for (its worktree's refs, the executor). */
export const exploreId = "taskledger-explore";

/** Tokens of findings the planner gets. */
export const findingsTokens = 1500;

/** The prompt of the read-only session that looks around before the plan. */
export function explorePrompt(request: string, digest: string | undefined): string {
  return [
    "# Look around the project before a plan is made",
    "A plan will be made for the request below. Find out what that plan needs to know. You",
    "cannot change anything: read, list and search files only; a write or a command is refused.",
    "",
    "Look for: where the code the request touches lives, how the project is built, tested and",
    "type-checked, its conventions, and anything that would surprise someone new to it.",
    "",
    "## The request",
    truncateToTokens(request.trim(), 2000),
    ...(digest ? ["", "## What is already known of the project", digest] : []),
    "",
    "End with your findings: at most 15 short lines, each one fact and the file it comes from.",
  ].join("\n");
}

const exploreSubTask = (description: string): SubTask => ({
  id: exploreId,
  title: "Explore the project (read-only)",
  description,
  successCriteria: ["The findings are reported."],
  dependsOn: [],
  checks: [],
});

/**
 * Runs the read-only session once per run (a run resumed after a crash mid-way runs it again),
 * in an attempt's directory, bounded by its timeout and the run's signal, and logs what it found.
 * A session that fails costs the plan its findings, never the run; a cancel stops the run.
 */
export async function exploreProject(ctx: RunContext): Promise<void> {
  const { state, settings, recorder, stop } = ctx;
  const explore = settings.explore;
  if (!explore || state.explore?.finished) return;
  const attempt = (state.explore?.attempts ?? 0) + 1;
  const prompt = explorePrompt(ctx.input.request, state.project?.text);
  await recorder.record({
    type: "explore-started",
    attempt,
    promptTokens: estimateTokens(prompt),
  });
  const started = performance.now();
  const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(explore.timeoutMs)]);
  let result: AttemptResult | undefined;
  let wrote: string[] = [];
  let failure: string | undefined;
  try {
    const space = await ctx.workspace.attempt(
      { subTaskId: exploreId, attempt, from: undefined },
      stop.signal,
    );
    try {
      result = checkAttemptResult(
        await ctx.options.executor.run(prompt, {
          subTask: exploreSubTask(prompt),
          runId: ctx.input.runId,
          attempt,
          cwd: space.cwd,
          abortSignal: signal,
          readOnly: true,
          ...(ctx.options.sandbox ? { sandbox: ctx.options.sandbox } : {}),
        }),
        "the executor's agent model",
      );
      // Whatever it changed all the same is found, reported and never merged.
      const capture = await space.capture("taskledger: explore (discarded)").catch(() => undefined);
      wrote = [...(capture?.filesChanged ?? []), ...(capture?.outsideCwd?.paths ?? [])].slice(
        0,
        50,
      );
    } finally {
      await space.dispose().catch(() => {});
    }
  } catch (error) {
    if (stop.signal.aborted) throw error;
    failure = describeError(error);
  }
  // Cut short by the run's cancel: not finished, so a resumed run explores again.
  if (stop.signal.aborted) throw new AbortedError("The run stopped while exploring the project");
  await recorder.record({
    type: "explore-finished",
    attempt,
    outcome: result?.outcome ?? "error",
    findings: result
      ? truncateToTokens(result.finalText.trim(), findingsTokens)
      : `(no findings: ${oneLine(failure ?? "the session did not run", 300)})`,
    refused: (result?.toolCalls ?? [])
      .filter((call) => call.status === "error" || call.tool === "invalid")
      .slice(0, 10)
      .map((call) => `${call.tool}: ${oneLine(call.output || call.input, 200)}`),
    wrote,
    usage: result?.usage ?? emptyUsage(),
    durationMs: Math.round(performance.now() - started),
  });
  await stop.checkSpendBudgets();
}
