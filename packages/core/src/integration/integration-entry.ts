import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { GateCheckResult } from "../log/run-events.js";
import { clipMiddle } from "../text/text-clip.js";
import { emptyUsage } from "../usage/usage.js";

// The failing checks' output a retry is told: enough for a stack trace, never the whole log.
const maxFeedbackOutputChars = 3000;

/**
 * A completed attempt whose merge broke the gate's checks: incomplete, told what failed on the
 * merged result and whose work it met there, to make its change work with theirs.
 */
export function integrationEntry(
  entry: ProgressEntry,
  results: readonly GateCheckResult[],
  met: readonly string[],
  fromMerged = false,
): ProgressEntry {
  const failed = results.filter((r) => !r.passed);
  const shown = failed.length > 0 ? failed : results;
  const perCheck = Math.floor(maxFeedbackOutputChars / Math.max(1, Math.min(shown.length, 3)));
  const outputs = shown
    .slice(0, 3)
    .map((r) => `$ ${r.argv.join(" ")}\n${clipMiddle(r.detail, perCheck)}`)
    .join("\n\n");
  const commands = failed.map((r) => `\`${r.argv.join(" ")}\``).join(", ") || "its checks";
  const what =
    `Your work passed its own checks, but merged with the run's branch` +
    (met.length > 0 ? ` (holding the work of ${met.join(", ")})` : "") +
    ` it fails ${commands}.`;
  const start = fromMerged
    ? "The next attempt starts from that merged result, your work and theirs in place: fix it so that the whole passes, keeping both."
    : "The next attempt starts from the run's branch as it is now, with that work in place: make your change again on top of it so that the whole passes.";
  const feedback = `${what} ${start}\n\n${outputs}`;
  return {
    completed: false,
    summary: entry.summary,
    outputData: "",
    feedback,
    evidence: shown.slice(0, 5).map((r) => ({
      source: "integration",
      passed: false,
      detail: `${r.argv.join(" ")}: ${clipMiddle(r.detail, 1000)}`,
    })),
    usage: emptyUsage(),
    incomplete: "integration",
  };
}
