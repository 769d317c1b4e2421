import { z } from "zod";
import { describeError } from "../errors/describe-error.js";
import { isAbortError, PlanValidationError, StructuredOutputError } from "../errors/errors.js";
import type { AcceptanceGap } from "../log/run-events.js";
import { currentLedger } from "../log/run-state.js";
import { callStructured } from "../model-call/structured-call.js";
import type { LanguageModel } from "../ports/model.js";
import type { RunContext } from "../run/run-context.js";
import { clipMiddle, oneLine } from "../text/text-clip.js";
import { truncateToTokens } from "../text/tokens.js";
import { emptyUsage, type Usage } from "../usage/usage.js";

export const acceptanceSchemaName = "request_acceptance";

/** Every field required on the wire, as the Task Ledger's are, for strict structured outputs. */
export const acceptanceSchema = z.object({
  /** True when the work done meets the request as a whole. */
  satisfied: z.boolean(),
  /** What the request asks for that the work does not do; empty when satisfied. */
  missing: z
    .array(z.object({ what: z.string().min(1).max(500), why: z.string().max(1000) }))
    .max(10)
    .default([]),
});
export type AcceptanceAnswer = z.infer<typeof acceptanceSchema>;

export interface AcceptanceVerdict {
  verdict: "satisfied" | "unsatisfied" | "unavailable";
  missing: AcceptanceGap[];
  reason?: string;
  usage: Usage;
}

// What the judge reads, bounded: the request, one line a sub-task, the combined change.
const requestTokens = 3000;
const diffChars = 12_000;
const outputCharsPerSubTask = 400;

const system = [
  "You are the acceptance judge of a coding agent's run. A request was split into sub-tasks; each",
  "was done and checked on its own, and the merged result passed the project's checks. Decide",
  "whether the request AS A WHOLE is met by the work done: every part of it, not only each",
  "sub-task's criteria. Name a gap only for something the request asks for that the work does not",
  "do (a requirement no sub-task covered, a part left out, pieces that do not fit together);",
  "never ask for more than the request, for style, or for tests it did not ask for.",
  `Answer as JSON only, named ${acceptanceSchemaName}: { "satisfied": boolean, "missing": [{ "what", "why" }] }.`,
].join("\n");

/**
 * One judge call reads the request, the facts, each sub-task's outcome, a bounded digest of the
 * combined change and the gate's last results, and says whether the request was met and what is
 * missing. A call that fails is `unavailable`, never a throw: the run's checked work stands.
 */
export async function judgeAcceptance(
  ctx: RunContext,
  model: LanguageModel,
): Promise<AcceptanceVerdict> {
  try {
    const result = await callStructured({
      model,
      system,
      prompt: await acceptancePrompt(ctx),
      output: { name: acceptanceSchemaName, schema: acceptanceSchema },
      validate: (answer) => {
        if (!answer.satisfied && answer.missing.length === 0) {
          throw new PlanValidationError([
            {
              kind: "schema",
              message:
                "satisfied is false but nothing is missing: name what is missing, or answer satisfied",
            },
          ]);
        }
        return answer;
      },
      repairMessage: (problem) =>
        `That answer cannot be used: ${problem}\nAnswer again as JSON only, named ${acceptanceSchemaName}.`,
      what: "acceptance",
      maxOutputTokens: 2000,
      abortSignal: ctx.stop.signal,
    });
    const { satisfied, missing } = result.value;
    return {
      verdict: satisfied ? "satisfied" : "unsatisfied",
      missing: satisfied ? [] : missing,
      usage: result.usage,
    };
  } catch (error) {
    if (isAbortError(error) || ctx.stop.signal.aborted) throw error;
    const spent =
      (StructuredOutputError.isInstance(error) || PlanValidationError.isInstance(error)) &&
      error.usage
        ? error.usage
        : emptyUsage();
    return {
      verdict: "unavailable",
      missing: [],
      reason: oneLine(describeError(error), 500),
      usage: spent,
    };
  }
}

async function acceptancePrompt(ctx: RunContext): Promise<string> {
  const { state, workspace, input } = ctx;
  const ledger = currentLedger(state);
  const lines = ledger.subTasks.map((subTask) => {
    const s = state.subTasks.get(subTask.id);
    const output = s?.entry?.outputData || s?.entry?.summary || "";
    const files = s?.merged?.filesChanged ?? [];
    return [
      `- ${subTask.id} [${s?.status ?? "pending"}]: ${subTask.title}`,
      `  criteria: ${oneLine(subTask.successCriteria.join("; "), 400)}`,
      ...(output ? [`  outcome: ${oneLine(output, outputCharsPerSubTask)}`] : []),
      ...(files.length > 0 ? [`  files: ${oneLine(files.slice(0, 20).join(", "), 300)}`] : []),
    ].join("\n");
  });
  const facts = (ledger.facts ?? []).map((f) => `- ${f.kind}: ${f.text}`);
  const gate = state.integration.final ?? state.integration.last;
  const gateLines = (gate?.results ?? []).map(
    (r) => `- ${r.passed ? "passed" : "FAILED"}: ${r.argv.join(" ")}`,
  );
  let change = "";
  if (workspace.record.kind === "worktree" && workspace.diff && state.tip) {
    change = await workspace
      .diff(
        { from: workspace.record.base, commit: state.tip, maxChars: diffChars },
        ctx.stop.signal,
      )
      .then((d) => d.text)
      .catch(() => "");
  }
  return [
    "## The request",
    truncateToTokens(input.request, requestTokens),
    "",
    ...(facts.length > 0 ? ["## The facts the plan rests on", ...facts, ""] : []),
    "## The sub-tasks and what each did",
    ...lines,
    "",
    ...(gateLines.length > 0
      ? ["## The project's checks on the merged result", ...gateLines, ""]
      : []),
    ...(change
      ? ["## The combined change (a digest, bounded)", clipMiddle(change, diffChars), ""]
      : []),
    "Is the request as a whole met? Name only what is missing.",
  ].join("\n");
}
