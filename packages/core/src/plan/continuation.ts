import { PlanValidationError } from "../errors/errors.js";
import type { SubTask } from "../ledger/sub-task.js";
import { type TaskLedger, validateTaskLedger } from "../ledger/task-ledger.js";
import type { AcceptanceGap } from "../log/run-events.js";
import type { LanguageModel } from "../ports/model.js";
import { oneLine } from "../text/text-clip.js";
import { truncateToTokens } from "../text/tokens.js";
import type { Usage } from "../usage/usage.js";
import { askForLedger } from "./planner.js";
import { refuseUsedIds } from "./replanner.js";

export interface ContinuationInput {
  model: LanguageModel;
  request: string;
  /** The plan as it stands, every sub-task done. */
  ledger: TaskLedger;
  /** Each sub-task's output, for the model to build on. */
  outputs: ReadonlyMap<string, string>;
  missing: readonly AcceptanceGap[];
  /** Every id the run has used: new ids must differ. */
  usedIds: ReadonlySet<string>;
  maxSubTasks: number;
  abortSignal: AbortSignal;
  project?: string | undefined;
}

const system = [
  "You are the manager of a coding agent. Every sub-task of your plan was done, but a judge of the",
  "request as a whole found parts of it missing. Plan ONLY the missing work, as few new sub-tasks",
  "as it takes, on top of what is done: the completed sub-tasks are kept and their results are in",
  "the project; new sub-tasks may depend on them (and on each other) by id. Do not redo done work.",
  "",
  "Answer with a Task Ledger as JSON holding ONLY the new sub-tasks. Their ids must be new.",
].join("\n");

/** Asks the model for sub-tasks that do what the acceptance found missing, on top of the plan. */
export async function planContinuation(
  input: ContinuationInput,
): Promise<{ ledger: TaskLedger; added: SubTask[]; usage: Usage }> {
  const kept = input.ledger.subTasks;
  const result = await askForLedger({
    model: input.model,
    system,
    prompt: continuationPrompt(input),
    validate: (answer) => {
      const added = answer?.subTasks ?? [];
      refuseUsedIds(added, input.usedIds);
      if (added.length === 0) {
        throw new PlanValidationError([
          { kind: "schema", message: "plan at least one new sub-task for the missing work" },
        ]);
      }
      return validateTaskLedger(
        { facts: input.ledger.facts ?? [], subTasks: [...kept, ...added] },
        { maxSubTasks: input.maxSubTasks },
      );
    },
    abortSignal: input.abortSignal,
  });
  const keptIds = new Set(kept.map((s) => s.id));
  return {
    ledger: result.ledger,
    added: result.ledger.subTasks.filter((s) => !keptIds.has(s.id)),
    usage: result.usage,
  };
}

function continuationPrompt(input: ContinuationInput): string {
  const facts = (input.ledger.facts ?? []).map((f) => `- ${f.kind}: ${f.text}`);
  return [
    ...(input.project ? ["## The project digest", input.project, ""] : []),
    "## The request",
    truncateToTokens(input.request, 2000),
    "",
    ...(facts.length > 0 ? ["## The facts the plan rests on", ...facts, ""] : []),
    "## Done (kept)",
    ...input.ledger.subTasks.map((s) => {
      const output = input.outputs.get(s.id);
      return `- ${s.id}: ${s.title}${output ? ` — output: ${oneLine(output, 300)}` : ""}`;
    }),
    "",
    "## Missing, as the acceptance judge found",
    ...input.missing.map(
      (m) => `- ${oneLine(m.what, 500)}${m.why ? ` (${oneLine(m.why, 500)})` : ""}`,
    ),
  ].join("\n");
}
