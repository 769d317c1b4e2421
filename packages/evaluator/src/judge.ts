import {
  AbortedError,
  addUsage,
  clipMiddle,
  type Evidence,
  isAbortError,
  type LanguageModel,
  type ModelMessage,
  type ProgressJudgment,
  parseStructuredOutput,
  progressJudgmentSchema,
  progressJudgmentSchemaName,
  StructuredOutputError,
  type SubTask,
  truncateToTokens,
  type Usage,
} from "@taskledger/core";
import { throwIfAborted } from "./abort.js";

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
  | { ok: true; judgment: ProgressJudgment; usage: Usage; calls: number }
  | { ok: false; reason: string; usage: Usage; calls: number };

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

/**
 * One structured call named `progress_ledger_entry`; an answer that does not parse gets one
 * repair call showing the model its answer and the error. Still unusable, or a failing model, is
 * `{ ok: false, reason }` rather than a throw, so an evaluation never crashes on the judge.
 */
export async function judgeAttempt(model: LanguageModel, input: JudgeInput): Promise<JudgeOutcome> {
  const messages: ModelMessage[] = [{ role: "user", content: buildJudgePrompt(input) }];
  let usage: Usage = addUsage();
  let calls = 0;
  for (let round = 0; round < 2; round++) {
    throwIfAborted(input.abortSignal);
    calls++;
    try {
      const result = await model.generate({
        system: judgeSystemPrompt,
        messages,
        output: { name: progressJudgmentSchemaName, schema: progressJudgmentSchema },
        maxOutputTokens: input.maxOutputTokens ?? 2000,
        abortSignal: input.abortSignal,
      });
      usage = addUsage(usage, result.usage);
      // A host model that ignores `output` still gets its text parsed (and repaired) the same way.
      const judgment = result.object ?? parseStructuredOutput(result.text, progressJudgmentSchema);
      return { ok: true, judgment, usage, calls };
    } catch (error) {
      if (input.abortSignal.aborted || isAbortError(error)) {
        throw AbortedError.isInstance(error)
          ? error
          : new AbortedError(undefined, { cause: error });
      }
      const message = error instanceof Error ? error.message : String(error);
      if (StructuredOutputError.isInstance(error)) usage = addUsage(usage, error.usage);
      if (!StructuredOutputError.isInstance(error) || round === 1) {
        const what = StructuredOutputError.isInstance(error)
          ? "answer could not be parsed after one repair"
          : "call failed";
        return {
          ok: false,
          reason: `The judge's ${what}: ${clipMiddle(message, 1000)}`,
          usage,
          calls,
        };
      }
      messages.push(
        { role: "assistant", content: clipMiddle(error.text || "(empty)", 4000) },
        {
          role: "user",
          content:
            `That answer cannot be used: ${clipMiddle(message, 1500)}\n\n` +
            `Answer again with JSON only: an object with completed (boolean), summary, outputData and feedback (strings).`,
        },
      );
    }
  }
  return { ok: false, reason: "The judge gave no usable answer.", usage, calls };
}
