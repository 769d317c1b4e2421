import {
  AbortedError,
  addUsage,
  callStructured,
  clipMiddle,
  type Evidence,
  type LanguageModel,
  type ProgressJudgment,
  progressJudgmentSchema,
  progressJudgmentSchemaName,
  StructuredOutputError,
  type SubTask,
  truncateToTokens,
  type Usage,
} from "@taskledger/core";
import { throwIfAborted } from "../abort.js";

export interface JudgeInput {
  request: string;
  subTask: SubTask;
  attempt: number;
  /** The bounded digest of the attempt (see `digestAttempt`). */
  digest: string;
  /** What the checkers found, already run. */
  evidence: readonly Evidence[];
  abortSignal: AbortSignal;
  maxOutputTokens?: number;
}

/** The judge's verdict, or why there is none; `usage` counts every call that returned, usable or not. */
export type JudgeOutcome =
  | { ok: true; judgment: ProgressJudgment; usage: Usage }
  | { ok: false; reason: string; usage: Usage };

export const judgeSystemPrompt = [
  "You judge one attempt of a coding agent at one sub-task and write its Progress Ledger entry.",
  "",
  "- The agent's own account of its work is unreliable. Base the verdict on evidence: the checks",
  "  that were run, the files written, tool outputs, and how the attempt ended.",
  "- completed is true only if every success criterion is met and nothing contradicts it. A",
  "  failing check, a cut-off or crashed run, or a criterion with no evidence means false.",
  "- summary: what the attempt actually achieved, in a few sentences.",
  "- outputData: what later sub-tasks need from this one, as plain facts: file paths, names,",
  "  exported APIs, commands, decisions. Empty when not completed.",
  "- feedback: when not completed, exactly what the next attempt must do differently or still",
  "  do: name the criterion, file, command or error. Never a generic reminder. Empty when completed.",
  "",
  `Answer with JSON only: the ${progressJudgmentSchemaName} object.`,
].join("\n");

const requestTokens = 600;
const descriptionTokens = 1500;
const criteriaTokens = 1000;
const evidenceChars = 700;

/** The judge's question: the sub-task, its criteria, the checks' results and the digest. */
export function buildJudgePrompt(input: Omit<JudgeInput, "abortSignal">): string {
  const { subTask } = input;
  const evidence = input.evidence.length
    ? input.evidence
        .map(
          (item) =>
            `- [${item.passed ? "pass" : "FAIL"}] ${item.source}: ${clipMiddle(item.detail, evidenceChars)}`,
        )
        .join("\n")
    : "(no checks were run)";
  return [
    `# Sub-task ${subTask.id}: ${subTask.title} (attempt ${input.attempt})`,
    "",
    "## The overall request (for orientation only)",
    truncateToTokens(input.request.trim(), requestTokens),
    "",
    "## The sub-task",
    truncateToTokens(subTask.description.trim(), descriptionTokens),
    "",
    "## Success criteria",
    truncateToTokens(subTask.successCriteria.map((c) => `- ${c}`).join("\n"), criteriaTokens),
    "",
    "## Checks run after the attempt (deterministic evidence)",
    evidence,
    "",
    "# The attempt",
    input.digest,
    "",
    "Judge whether this sub-task is complete and write the entry.",
  ].join("\n");
}

const repairMessage = (problem: string): string =>
  `That answer cannot be used: ${problem}\n\n` +
  "Answer again with JSON only: an object with completed (boolean), summary, outputData and feedback (strings).";

/**
 * One structured call named `progress_ledger_entry`, repaired at most once by core's
 * `callStructured`. Still unusable, or a failing model, is `{ ok: false, reason }` rather than a
 * throw, so an evaluation never crashes on the judge.
 */
export async function judgeAttempt(model: LanguageModel, input: JudgeInput): Promise<JudgeOutcome> {
  throwIfAborted(input.abortSignal);
  try {
    const result = await callStructured({
      model,
      system: judgeSystemPrompt,
      prompt: buildJudgePrompt(input),
      output: { name: progressJudgmentSchemaName, schema: progressJudgmentSchema },
      validate: (judgment) => judgment,
      repairMessage,
      what: "judgment",
      maxOutputTokens: input.maxOutputTokens ?? 2000,
      abortSignal: input.abortSignal,
    });
    return { ok: true, judgment: result.value, usage: result.usage };
  } catch (error) {
    if (input.abortSignal.aborted || AbortedError.isInstance(error)) throw error;
    const unusable = StructuredOutputError.isInstance(error);
    const message = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      reason: `${unusable ? "The judge gave no usable answer" : "The judge's call failed"}: ${clipMiddle(message, 1000)}`,
      usage: (unusable ? error.usage : undefined) ?? addUsage(),
    };
  }
}
