import {
  type Evidence,
  judgeEvidenceSource,
  judgeUnavailableEvidenceSource,
  type ProgressEntry,
  stuckEvidenceSource,
} from "./progress-entry.js";
import type { SubTask } from "./sub-task.js";
import type { Fact } from "./task-ledger.js";
import { truncateToTokens } from "./tokens.js";

export function plannerSystemPrompt(maxSubTasks: number): string {
  return [
    "You are the manager of a coding agent. Turn the user's request into a Task Ledger: a small",
    "graph of sub-tasks. Each sub-task is done by a fresh agent session that sees only that",
    "sub-task's text and the outputs of the sub-tasks it depends on, never the others' work.",
    "",
    "Rules:",
    `- Use as few sub-tasks as the work needs, at most ${maxSubTasks}. A request that is one step is one sub-task.`,
    "- Each sub-task must be self-contained: say exactly what to do, where, and what to report back.",
    "- successCriteria are concrete and checkable (a file exists with given content, a command passes).",
    "- dependsOn lists only the sub-tasks whose results this one needs; independent sub-tasks run in parallel.",
    "- ids are short kebab-case words, unique in the plan.",
    "- checks are optional, machine-verifiable: a command that must exit 0, a file that must exist,",
    "  or a file whose text must match a pattern. A command is an argv run without a shell, in the",
    "  sub-task's own copy of the project (its dependencies installed), from the run's directory.",
    "- Independent sub-tasks run at once, each in a separate copy of the project, merged afterwards.",
    "  paths lists the files or globs (from the run's directory) a sub-task expects to change; two",
    "  sub-tasks whose paths overlap never run at the same time. Leave it empty when unsure.",
    "- The project's own test and typecheck commands (listed in the project digest, when there is",
    "  one) are every sub-task's checks once it changes files; set projectChecks to false for a",
    "  sub-task they cannot pass yet (the tests of a later step) or do not concern.",
    "- risky marks a sub-task likely to fail its first attempt: several plausible approaches of",
    "  which few are right, subtle logic (concurrency, parsing, numerics, security), or a change",
    "  many later sub-tasks rest on. Mark few: at most a quarter of the plan; never boilerplate,",
    "  docs or mechanical edits.",
    "- facts come first: what the plan rests on, each of one kind: given (stated in the request or",
    "  the project digest), to-look-up (to find in the project), to-derive (to work out), guess",
    "  (an educated guess). Short, concrete, at most 30; every sub-task is shown them.",
    "",
    "Answer with the Task Ledger as JSON only.",
  ].join("\n");
}

export function plannerRepairMessage(errorMessage: string): string {
  return [
    "That Task Ledger cannot be used:",
    errorMessage,
    "",
    "Return the corrected Task Ledger as JSON only. Keep what was right; fix only what is listed.",
  ].join("\n");
}

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
