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
  try {
    await git(args, { cwd, abortSignal });
  } catch (cause) {
    if (abortSignal.aborted) throw cause;
    throw new QueueError(
      "remote-failed",
      `git ${args[0]} to the shared remote failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, isRetryable: true },
    );
  }
}
