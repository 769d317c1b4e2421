import { QueueError } from "@taskledger/core";
import { gitBytes } from "@taskledger/git-workspace";
import type { AttemptJobResult } from "../job/attempt-job.js";
import { gitIn, remoteGit } from "./remote-git.js";

/**
 * Checks out a worker's commit in the attempt's directory: its objects unpacked from the result
 * when they came with it, else fetched from the work ref it was pushed to.
 */
export async function checkOutWork(
  cwd: string,
  output: AttemptJobResult,
  remote: string,
  workRef: string,
  abortSignal: AbortSignal,
): Promise<void> {
  if (!output.commit) return;
  if (output.pack) {
    await gitBytes(["unpack-objects", "-q"], {
      cwd,
      input: Buffer.from(output.pack, "base64"),
      abortSignal,
    }).catch((cause: unknown) => {
      if (abortSignal.aborted) throw cause;
      throw new QueueError(
        "remote-failed",
        `The attempt's commit from its worker could not be unpacked: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause, isRetryable: true },
      );
    });
  } else {
    await remoteGit(
      cwd,
      ["fetch", "-q", "--no-tags", "--no-write-fetch-head", remote, `+${workRef}:${workRef}`],
      abortSignal,
    );
  }
  await gitIn(cwd, ["checkout", "-q", "-f", "--detach", output.commit]);
}
