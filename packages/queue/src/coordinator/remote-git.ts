import { QueueError } from "@taskledger/core";
import { git } from "@taskledger/git-workspace";

/** Git in the attempt's directory, its output trimmed. */
export async function gitIn(
  cwd: string,
  args: string[],
  abortSignal?: AbortSignal,
): Promise<string> {
  return (await git(args, { cwd, abortSignal })).stdout.trim();
}

/** Git talking to the shared remote: its failure is the queue's, named as such. */
export async function remoteGit(
  cwd: string,
  args: string[],
  abortSignal: AbortSignal,
): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await git(args, { cwd, abortSignal });
      return;
    } catch (cause) {
      if (abortSignal.aborted) throw cause;
      // A fetch's connectivity check read the placeholder HEAD of a worktree the run's workspace
      // was adding at that moment: it holds a real commit a moment later.
      if (tries < 4 && /bad object worktrees\//.test(String(cause))) {
        await new Promise((resolve) => setTimeout(resolve, 100 * tries));
        continue;
      }
      throw new QueueError(
        "remote-failed",
        `git ${args[0]} to the shared remote failed: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause, isRetryable: true },
      );
    }
  }
}
