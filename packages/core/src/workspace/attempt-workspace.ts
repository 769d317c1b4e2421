import { describeError } from "../errors/describe-error.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTaskState } from "../log/run-state.js";
import type { AttemptResult } from "../ports/executor.js";
import type { AttemptSpace } from "../ports/workspace.js";
import type { RunContext } from "../run/run-context.js";
import { emptyUsage } from "../usage/usage.js";

// Files kept per record and named in feedback; a sub-task touching more is counted, not listed.
export const maxRecordedFiles = 500;
const maxFilesInFeedback = 30;

type Opened = { ok: true; space: AttemptSpace } | { ok: false; error: unknown };

/** Logs what the workspace did to prepare slots since it was last asked. */
export async function recordPreparations(
  ctx: Pick<RunContext, "workspace" | "recorder">,
): Promise<void> {
  for (const preparation of ctx.workspace.takePreparations?.() ?? [])
    await ctx.recorder.record({ type: "slot-prepared", preparation });
}

/** The directory an attempt works in; a git failure is the attempt's error, not the run's. */
export async function openSpace(
  ctx: RunContext,
  s: SubTaskState,
  attempt: number,
  from: string | undefined,
  abortSignal: AbortSignal,
): Promise<Opened> {
  try {
    const space = await ctx.workspace.attempt(
      { subTaskId: s.subTask.id, attempt, from },
      abortSignal,
    );
    await recordPreparations(ctx);
    return { ok: true, space };
  } catch (error) {
    await recordPreparations(ctx);
    return { ok: false, error };
  }
}

/** Makes the attempt's work one commit; the files it changed come from git, not the agent. */
export async function captureWork(
  s: SubTaskState,
  attempt: number,
  space: AttemptSpace,
  result: AttemptResult,
): Promise<{ result: AttemptResult; commit?: string }> {
  try {
    const captured = await space.capture(commitTitle(s, attempt));
    if (!captured) {
      const outside = await space.outside?.();
      return { result: outside ? { ...result, outsideCwd: outside } : result };
    }
    return {
      result: {
        ...result,
        filesChanged: captured.filesChanged.slice(0, maxRecordedFiles),
        ...(captured.outsideCwd ? { outsideCwd: captured.outsideCwd } : {}),
      },
      commit: captured.commit,
    };
  } catch (error) {
    const note = `Its changes could not be kept: ${describeError(error)}`;
    return { result: { ...result, error: result.error ? `${result.error}. ${note}` : note } };
  }
}

/** The attempt's commit again, its message now carrying the evaluator's summary. */
export async function finalCommit(
  ctx: RunContext,
  s: SubTaskState,
  attempt: number,
  entry: ProgressEntry,
  commit: string | undefined,
): Promise<string | undefined> {
  if (ctx.workspace.record.kind !== "worktree" || !commit) return undefined;
  const summary = entry.summary.trim();
  const message = summary ? `${commitTitle(s, attempt)}\n\n${summary}` : commitTitle(s, attempt);
  try {
    return await ctx.workspace.reword(commit, message);
  } catch {
    // The first message (sub-task and attempt) is still a fine one.
    return undefined;
  }
}

/**
 * Records a completed sub-task, merging its work into the run's branch first with worktrees.
 * Returns the entry that replaces the completed one when the merge conflicted.
 */
export async function integrate(
  ctx: RunContext,
  s: SubTaskState,
  attempt: number,
  entry: ProgressEntry,
): Promise<ProgressEntry | undefined> {
  const { workspace, recorder, state } = ctx;
  const subTaskId = s.subTask.id;
  const commit = s.workFrom;
  if (workspace.record.kind !== "worktree" || !commit) {
    await recorder.record({ type: "sub-task-completed", subTaskId, attempts: attempt, entry });
    return undefined;
  }
  let conflict: ProgressEntry | undefined;
  const conflicted = async (files: string[], detail: string) => {
    const met = [...state.subTasks.values()]
      .filter((o) => o.merged?.filesChanged.some((file) => files.includes(file)))
      .map((o) => o.subTask.id);
    conflict = conflictEntry(entry, files, met, detail);
    await recorder.record({
      type: "sub-task-conflicted",
      subTaskId,
      attempt,
      files: files.slice(0, maxRecordedFiles),
      with: met,
      entry: conflict,
    });
  };
  try {
    await workspace.integrate({
      subTaskId,
      title: s.subTask.title,
      commit,
      onMerged: async (integration) => {
        if (!integration.merged) return conflicted(integration.conflicts, "");
        await recorder.record({
          type: "sub-task-completed",
          subTaskId,
          attempts: attempt,
          entry,
          workspace: {
            commit,
            merge: integration.merge,
            filesChanged: integration.filesChanged.slice(0, maxRecordedFiles),
          },
        });
      },
    });
  } catch (error) {
    if (!conflict && s.status !== "completed")
      await conflicted([], `It could not be merged: ${describeError(error)}`);
  }
  return conflict;
}

function commitTitle(s: SubTaskState, attempt: number): string {
  return `${s.subTask.id}, attempt ${attempt}: ${s.subTask.title}`;
}

/** A completed attempt whose work met other merged work: incomplete, with what it met. */
function conflictEntry(
  entry: ProgressEntry,
  files: readonly string[],
  met: readonly string[],
  detail: string,
): ProgressEntry {
  const named = files.slice(0, maxFilesInFeedback).join(", ");
  const more =
    files.length > maxFilesInFeedback ? ` and ${files.length - maxFilesInFeedback} more` : "";
  const what = detail
    ? detail
    : `Your work conflicted with work already merged into the run's branch, in ${named}${more}` +
      (met.length > 0 ? ` (changed by ${met.join(", ")}).` : ".");
  const feedback =
    `${what} The next attempt starts from the run's branch as it is now, with that work in ` +
    "place: make your change again on top of it, keeping what is there.";
  return {
    completed: false,
    summary: entry.summary,
    outputData: "",
    feedback,
    evidence: [{ source: "merge", passed: false, detail: what.slice(0, 4000) }],
    usage: emptyUsage(),
    incomplete: "merge-conflict",
  };
}
