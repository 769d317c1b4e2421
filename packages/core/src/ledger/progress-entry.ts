import { z } from "zod";
import { usageSchema } from "../usage/usage.js";

/** One piece of evidence behind a judgment: a checker's verdict or a fact about the attempt. */
export const evidenceSchema = z.object({
  /** What produced it: `finish-reason`, `command: npm test`, `llm-judge`, a custom checker. */
  source: z.string().min(1).max(200),
  passed: z.boolean(),
  detail: z.string().max(4000),
});
export type Evidence = z.infer<typeof evidenceSchema>;

/**
 * What the judge model answers about one attempt. Its structured-output name is
 * `progress_ledger_entry`; evidence and usage are added by the evaluator, not the model.
 */
export const progressJudgmentSchema = z.object({
  completed: z.boolean(),
  /** What the attempt achieved, for people and for the report. */
  summary: z.string().max(4000),
  /** What dependent sub-tasks need from this one, as text. */
  outputData: z.string().max(20_000),
  /** What the next attempt must do differently; empty when completed. */
  feedback: z.string().max(4000),
});
export type ProgressJudgment = z.infer<typeof progressJudgmentSchema>;
export const progressJudgmentSchemaName = "progress_ledger_entry";

/**
 * Why an attempt is incomplete, for the escalation ladder: `not-finished` (the agent did not end
 * on its own), `checks-failed`, `judged-incomplete`, `stuck` (it repeated the previous attempt),
 * `judge-unavailable` (no judgment could be had), `evaluator-failed`, `interrupted` (the manager
 * process stopped while it ran), `merge-conflict` (its work did not merge into the run's branch),
 * `integration` (merged with the run's branch, it broke the integration gate's checks).
 */
export const incompleteReasonSchema = z.enum([
  "not-finished",
  "checks-failed",
  "judged-incomplete",
  "stuck",
  "judge-unavailable",
  "evaluator-failed",
  "interrupted",
  "merge-conflict",
  "integration",
]);
export type IncompleteReason = z.infer<typeof incompleteReasonSchema>;

/** One entry of the Progress Ledger: the evaluator's verdict on one attempt of one sub-task. */
export const progressEntrySchema = progressJudgmentSchema.extend({
  evidence: z.array(evidenceSchema),
  /** Tokens the evaluation itself spent. */
  usage: usageSchema,
  /** Why it is incomplete; absent when completed (and in logs written before it existed). */
  incomplete: incompleteReasonSchema.optional(),
  /** A hash of what the attempt left behind, kept in the log so stuck detection survives a restart. */
  fingerprint: z.string().max(200).optional(),
});
export type ProgressEntry = z.infer<typeof progressEntrySchema>;

/** The `source` of the evidence item that says an attempt repeated the previous one exactly. */
export const stuckEvidenceSource = "stuck";
/** The `source` of the LLM judge's evidence item. */
export const judgeEvidenceSource = "llm-judge";
/** The `source` of the evidence item that says the judge could not answer (timeout, outage). */
export const judgeUnavailableEvidenceSource = "llm-judge-unavailable";

/** True when the entry is incomplete only because no judgment could be had: not the agent's fault. */
export function isJudgeUnavailable(entry: ProgressEntry): boolean {
  return incompleteReasonOf(entry) === "judge-unavailable";
}

/** True when the entry says its attempt made no progress over the previous one. */
export function isStuckEntry(entry: ProgressEntry): boolean {
  return incompleteReasonOf(entry) === "stuck";
}

/**
 * The entry's typed reason; for an entry from a log written before `incomplete` existed (or a
 * host evaluator that leaves it out), read from its evidence once, here.
 */
export function incompleteReasonOf(entry: ProgressEntry): IncompleteReason | undefined {
  if (entry.completed) return undefined;
  if (entry.incomplete) return entry.incomplete;
  const failed = entry.evidence.filter((item) => !item.passed);
  if (failed.some((item) => item.source === stuckEvidenceSource)) return "stuck";
  if (failed.length > 0 && failed.every((item) => item.source === judgeUnavailableEvidenceSource))
    return "judge-unavailable";
  if (failed.some((item) => item.source === "evaluator")) return "evaluator-failed";
  if (failed.some((item) => item.source === judgeEvidenceSource)) return "judged-incomplete";
  if (failed.some((item) => item.source === "finish-reason")) return "not-finished";
  return failed.length > 0 ? "checks-failed" : "judged-incomplete";
}
