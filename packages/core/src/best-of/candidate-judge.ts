import { z } from "zod";
import { describeError } from "../errors/describe-error.js";
import { isAbortError, PlanValidationError } from "../errors/errors.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTask } from "../ledger/sub-task.js";
import { callStructured } from "../model-call/structured-call.js";
import type { LanguageModel } from "../ports/model.js";
import { clipMiddle, oneLine } from "../text/text-clip.js";
import { estimateTokens, truncateToTokens } from "../text/tokens.js";
import { emptyUsage, type Usage } from "../usage/usage.js";
import { changedLines, distinctiveDiff } from "./candidate-diff-view.js";

export const candidateChoiceSchemaName = "candidate_choice";

/** Every field required on the wire, as the Task Ledger's are, for strict structured outputs. */
export const candidateChoiceSchema = z.object({
  /** The attempt number of the best complete candidate, or null when none does the sub-task. */
  winner: z.number().int().nullable(),
  reasons: z.string().max(4000),
  /** One line per candidate not chosen: what is wrong with it, or why the winner is better. */
  losers: z
    .array(z.object({ attempt: z.number().int(), why: z.string().max(1000) }))
    .max(8)
    .default([]),
});
export type CandidateChoiceAnswer = z.infer<typeof candidateChoiceSchema>;

/** What the comparative judge is shown of one candidate that passed its checks. */
export interface JudgedCandidate {
  attempt: number;
  agentModel?: string;
  entry: ProgressEntry;
  /** Its change against the round's start, and how many lines it adds and removes. */
  diff: { text: string; linesChanged: number };
}

export interface CandidateChoiceResult {
  winner?: number;
  by: "judge" | "rule";
  reason: string;
  /** Why each candidate not chosen lost. */
  losers: Map<number, string>;
  usage: Usage;
}

/** Tokens all candidates' material may take in the judge's prompt, shared out equally. */
export const candidateJudgeTokenBudget = 24_000;
// Of each candidate's share: its evaluation's summary and evidence; the rest is its diff.
const summaryTokens = 300;
const evidenceTokens = 400;

const system = [
  "You compare candidate solutions of one sub-task of a coding task. Every candidate was made",
  "independently from the same starting code, and every one passed its automatic checks. Checks",
  "can be weak: read each diff and decide which one really does what the sub-task asks, meets its",
  "success criteria, and is correct in the cases the checks do not cover.",
  "A long diff is shown where it differs from the others: the lines it leaves out are unchanged",
  "code or changes every candidate made alike.",
  "",
  "Name the winner by its attempt number. If no candidate does the sub-task (each is wrong or",
  "incomplete), answer winner null. When two are equally right, prefer the smaller, simpler change.",
  "Give your reasons, and for each candidate not chosen one line saying why it lost.",
  `Answer as JSON only, named ${candidateChoiceSchemaName}.`,
].join("\n");

/**
 * One comparative judge call over candidates that passed their checks, each shown within an equal
 * share of `candidateJudgeTokenBudget`. A judge that cannot answer, or names a candidate it was not
 * shown, leaves the choice to `ruleChoice`.
 */
export async function chooseCandidate(input: {
  model: LanguageModel | undefined;
  request: string;
  subTask: SubTask;
  candidates: readonly JudgedCandidate[];
  abortSignal: AbortSignal;
}): Promise<CandidateChoiceResult> {
  const { model, candidates } = input;
  if (!model) return ruleChoice(candidates, "No model to judge with: chosen by the tie rule.");
  const shown = new Set(candidates.map((c) => c.attempt));
  try {
    const result = await callStructured({
      model,
      system,
      prompt: choicePrompt(input.request, input.subTask, candidates),
      output: { name: candidateChoiceSchemaName, schema: candidateChoiceSchema },
      validate: (answer) => {
        if (answer.winner !== null && !shown.has(answer.winner)) {
          throw new PlanValidationError([
            {
              kind: "schema",
              message: `winner ${answer.winner} is not one of the candidates shown (${[...shown].join(", ")}); name one of them, or null`,
            },
          ]);
        }
        return answer;
      },
      repairMessage: (problem) =>
        `That answer cannot be used: ${problem}\nAnswer again as JSON only, named ${candidateChoiceSchemaName}.`,
      what: "choice",
      maxOutputTokens: 2000,
      abortSignal: input.abortSignal,
    });
    const answer = result.value;
    const losers = new Map<number, string>();
    for (const loser of answer.losers)
      if (shown.has(loser.attempt) && loser.attempt !== answer.winner)
        losers.set(loser.attempt, oneLine(loser.why, 500));
    const reasons = oneLine(answer.reasons, 2000);
    for (const c of candidates) {
      if (c.attempt !== answer.winner && !losers.has(c.attempt))
        losers.set(c.attempt, answer.winner === null ? reasons : "The judge preferred another.");
    }
    return {
      ...(answer.winner === null ? {} : { winner: answer.winner }),
      by: "judge",
      reason: reasons,
      losers,
      usage: result.usage,
    };
  } catch (error) {
    if (input.abortSignal.aborted || isAbortError(error)) throw error;
    const usage = (error as { usage?: Usage }).usage ?? emptyUsage();
    const choice = ruleChoice(
      candidates,
      `The judge could not choose (${oneLine(describeError(error), 300)}): chosen by the tie rule.`,
    );
    return { ...choice, usage };
  }
}

/**
 * The tie rule: most evidence passed, then the smallest change (lines added and removed), then
 * the lowest attempt number (the first started).
 */
export function ruleChoice(
  candidates: readonly JudgedCandidate[],
  why: string,
): CandidateChoiceResult {
  const passed = (c: JudgedCandidate) => c.entry.evidence.filter((e) => e.passed).length;
  const ranked = [...candidates].sort(
    (a, b) =>
      passed(b) - passed(a) || a.diff.linesChanged - b.diff.linesChanged || a.attempt - b.attempt,
  );
  const winner = ranked[0];
  const losers = new Map<number, string>();
  for (const c of ranked.slice(1)) {
    losers.set(
      c.attempt,
      passed(c) < passed(winner!)
        ? `Passed fewer checks (${passed(c)} against ${passed(winner!)}).`
        : c.diff.linesChanged > winner!.diff.linesChanged
          ? `A larger change (${c.diff.linesChanged} lines against ${winner!.diff.linesChanged}).`
          : `Started after attempt ${winner!.attempt}, its equal.`,
    );
  }
  return {
    ...(winner ? { winner: winner.attempt } : {}),
    by: "rule",
    reason: why,
    losers,
    usage: emptyUsage(),
  };
}

function choicePrompt(request: string, subTask: SubTask, candidates: readonly JudgedCandidate[]) {
  const share = Math.floor(candidateJudgeTokenBudget / Math.max(1, candidates.length));
  const changed = candidates.map((c) => changedLines(c.diff.text));
  return [
    "## The request",
    truncateToTokens(request, 1500),
    "",
    `## The sub-task ${subTask.id}: ${subTask.title}`,
    truncateToTokens(subTask.description, 1500),
    "Success criteria:",
    ...subTask.successCriteria.map((c) => `- ${oneLine(c, 300)}`),
    "",
    ...candidates.flatMap((c, i) =>
      candidateSection(
        c,
        share,
        changed.filter((_, j) => j !== i),
      ),
    ),
  ].join("\n");
}

function candidateSection(
  c: JudgedCandidate,
  share: number,
  others: readonly ReadonlySet<string>[],
): string[] {
  const summary = truncateToTokens(c.entry.summary || "(no summary)", summaryTokens);
  const evidence = truncateToTokens(
    c.entry.evidence
      .slice(0, 20)
      .map((e) => `- ${e.passed ? "passed" : "FAILED"} ${e.source}: ${oneLine(e.detail, 200)}`)
      .join("\n") || "(none)",
    evidenceTokens,
  );
  const room = Math.max(200, share - estimateTokens(summary) - estimateTokens(evidence) - 50);
  return [
    `## Candidate attempt ${c.attempt}${c.agentModel ? ` (${c.agentModel})` : ""}`,
    `Evaluation: ${summary}`,
    "Evidence:",
    evidence,
    `Diff (${c.diff.linesChanged} lines changed):`,
    "```diff",
    clipMiddle(distinctiveDiff(c.diff.text, others, room * 4) || "(no change)", room * 4, 0.7),
    "```",
    "",
  ];
}
