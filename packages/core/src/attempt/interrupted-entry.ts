import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTaskState } from "../log/run-state.js";
import { emptyUsage } from "../usage/usage.js";

/** What the next attempt is told about one that a stopped manager process never saw finish. */
export function interruptedEntry(
  attempt: number,
  before: SubTaskState["previous"],
  isolated: boolean,
): { attempt: number; entry: ProgressEntry } {
  const note =
    `Attempt ${attempt} was interrupted before it finished: the manager process stopped. ` +
    (isolated
      ? "Its unfinished changes were not kept: check what is already done and finish the rest."
      : "Files it changed may already be in the working directory: check what is already done and " +
        "finish the rest instead of starting over.");
  return {
    attempt,
    entry: {
      completed: false,
      summary: note,
      outputData: "",
      feedback: before?.entry.feedback ? `${note} Before that: ${before.entry.feedback}` : note,
      evidence: [],
      usage: emptyUsage(),
      incomplete: "interrupted",
    },
  };
}
