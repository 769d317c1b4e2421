import {
  type Evidence,
  judgeEvidenceSource,
  judgeUnavailableEvidenceSource,
  type ProgressEntry,
  stuckEvidenceSource,
} from "../ledger/progress-entry.js";
import type { SubTask } from "../ledger/sub-task.js";
import type { Fact } from "../ledger/task-ledger.js";
import { truncateToTokens } from "../text/tokens.js";

export interface SubTaskPromptInput {
  request: string;
  subTask: SubTask;
  /** Outputs of earlier sub-tasks, already cut to the context budget. */
  context: string;
  /** The Progress Ledger entry of the previous, incomplete attempt. */
  previous?: { attempt: number; entry: ProgressEntry };
  /** Tokens the overall request may take in the prompt. */
  requestTokens: number;
  /** The facts the plan rests on; at most `factTokens` of them reach the prompt. */
  facts?: readonly Fact[];
}

/** Tokens the plan's facts may take in one attempt's prompt. */
export const factTokens = 600;

/** The prompt of one attempt: the sub-task, its criteria, earlier results and, on a retry, why. */
export function buildSubTaskPrompt(input: SubTaskPromptInput): string {
  const { subTask, previous } = input;
  const parts = [
    `# Sub-task ${subTask.id}: ${subTask.title}`,
    "You are doing one step of a larger request. Do this step completely, then stop.",
    "",
    "## The overall request (for orientation; do only your sub-task)",
    truncateToTokens(input.request.trim(), input.requestTokens),
    "",
    "## Your sub-task",
    subTask.description.trim(),
    "",
    "## Done when",
    ...subTask.successCriteria.map((criterion) => `- ${criterion}`),
  ];
  const facts = (input.facts ?? []).map((f) => `- (${f.kind}) ${f.text}`).join("\n");
  if (facts) {
    parts.push(
      "",
      "## Facts the plan rests on (guesses and things to look up are unverified)",
      truncateToTokens(facts, factTokens),
    );
  }
  if (input.context) {
    parts.push("", "## Results of earlier sub-tasks", input.context);
  }
  if (previous) {
    parts.push(
      "",
      `## Previous attempt (attempt ${previous.attempt} was not complete)`,
      previous.entry.feedback.trim() || previous.entry.summary.trim(),
      ...failedEvidence(previous.entry.evidence),
    );
  }
  parts.push(
    "",
    "When you are done, end with a short account of what you did and where the results are.",
  );
  return parts.join("\n");
}

// The judge's and the stuck detector's verdicts are already in the feedback; repeating them wastes tokens.
const restatedInFeedback = new Set([
  judgeEvidenceSource,
  judgeUnavailableEvidenceSource,
  stuckEvidenceSource,
]);

function failedEvidence(evidence: readonly Evidence[]): string[] {
  const failed = evidence
    .filter((item) => !item.passed && !restatedInFeedback.has(item.source))
    .slice(0, 5);
  if (failed.length === 0) return [];
  return [
    "Failed checks:",
    ...failed.map((item) => `- ${item.source}: ${item.detail.slice(0, 500)}`),
  ];
}
