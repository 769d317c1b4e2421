import { type PlanIssue, PlanValidationError } from "../errors/errors.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTask } from "../ledger/sub-task.js";
import { type Fact, maxFacts, type TaskLedger, validateTaskLedger } from "../ledger/task-ledger.js";
import type { LanguageModel } from "../ports/model.js";
import { oneLine } from "../text/text-clip.js";
import { truncateToTokens } from "../text/tokens.js";
import type { Usage } from "../usage/usage.js";
import { askForLedger } from "./planner.js";

export interface ReplanInput {
  model: LanguageModel;
  request: string;
  /** The plan as it stands, replaced sub-tasks already left out. */
  ledger: TaskLedger;
  /** Status and output of each sub-task of `ledger`, for the model to build on. */
  progress: ReadonlyMap<string, { status: string; outputData: string }>;
  failed: SubTask;
  attempts: number;
  lastEntry: ProgressEntry | undefined;
  /** The failed sub-task and everything downstream of it: what the replacement takes over. */
  replaced: readonly string[];
  /** Every id the run has used, replaced ones included: new ids must differ. */
  usedIds: ReadonlySet<string>;
  maxSubTasks: number;
  abortSignal: AbortSignal;
  /** The project digest's text, as the planner had it. */
  project?: string | undefined;
}

export interface ReplanResult {
  /** The whole plan after the change. */
  ledger: TaskLedger;
  added: SubTask[];
  usage: Usage;
}

const system = [
  "You are the manager of a coding agent. A sub-task of your plan failed several times. Replace",
  "it, and the sub-tasks that depended on it, with new sub-tasks that reach the same goals another",
  "way: smaller steps, a different approach, or work that first removes the obstacle the attempts",
  "ran into. Completed sub-tasks are kept and their results stay available: new sub-tasks may",
  "depend on them (and on each other) by id.",
  "",
  "Answer with a Task Ledger as JSON holding ONLY the new sub-tasks, and any facts learnt from the",
  "failure. Their ids must be new.",
].join("\n");

/** Asks the model for replacement sub-tasks and checks the plan they make with what is kept. */
export async function replanSubTask(input: ReplanInput): Promise<ReplanResult> {
  const replaced = new Set(input.replaced);
  const kept = input.ledger.subTasks.filter((s) => !replaced.has(s.id));
  const result = await askForLedger({
    model: input.model,
    system,
    prompt: replanPrompt(input, kept),
    validate: (answer) => {
      const added = answer?.subTasks ?? [];
      refuseUsedIds(added, input.usedIds);
      return validateTaskLedger(
        { facts: mergeFacts(input.ledger.facts, answer?.facts), subTasks: [...kept, ...added] },
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

/** New sub-tasks must not reuse an id the run has used, replaced ones included. */
export function refuseUsedIds(
  added: readonly { id: string }[],
  usedIds: ReadonlySet<string>,
): void {
  const reused = added.filter((s) => usedIds.has(s.id));
  if (reused.length === 0) return;
  const issues: PlanIssue[] = reused.map((s) => ({
    kind: "duplicate-id",
    subTaskId: s.id,
    message: `sub-task id "${s.id}" is already used in this run; choose a new one`,
  }));
  throw new PlanValidationError(issues);
}

/** The plan's facts, then the replan's new ones, each once, within the ledger's bound. */
function mergeFacts(kept: readonly Fact[] | undefined, added: readonly Fact[] | undefined): Fact[] {
  const seen = new Set<string>();
  const merged: Fact[] = [];
  for (const fact of [...(kept ?? []), ...(added ?? [])]) {
    if (seen.has(fact.text)) continue;
    seen.add(fact.text);
    merged.push(fact);
  }
  return merged.slice(-maxFacts);
}

function replanPrompt(input: ReplanInput, kept: readonly SubTask[]): string {
  const line = (s: SubTask) => {
    const progress = input.progress.get(s.id);
    const after = s.dependsOn.length > 0 ? ` (after ${s.dependsOn.join(", ")})` : "";
    const output = progress?.outputData ? ` — output: ${oneLine(progress.outputData, 300)}` : "";
    return `- ${s.id} [${progress?.status ?? "pending"}]: ${s.title}${after}${output}`;
  };
  const entry = input.lastEntry;
  const failedChecks = (entry?.evidence ?? []).filter((e) => !e.passed).slice(0, 6);
  const replaced = input.ledger.subTasks.filter((s) => input.replaced.includes(s.id));
  const facts = (input.ledger.facts ?? []).map((f) => `- ${f.kind}: ${f.text}`);
  return [
    ...(input.project ? ["## The project digest", input.project, ""] : []),
    "## The request",
    truncateToTokens(input.request, 2000),
    "",
    ...(facts.length > 0 ? ["## The facts the plan rests on", ...facts, ""] : []),
    "## The plan, with what is kept",
    ...kept.map(line),
    "",
    `## Failed after ${input.attempts} attempt(s): ${input.failed.id}`,
    `${input.failed.title}: ${input.failed.description}`,
    "Success criteria:",
    ...input.failed.successCriteria.map((c) => `- ${c}`),
    "",
    "What the last attempt showed:",
    truncateToTokens(entry?.feedback || entry?.summary || "(no evaluation)", 800),
    ...failedChecks.map((e) => `- ${e.source}: ${oneLine(e.detail, 300)}`),
    "",
    "## To replace (the failed sub-task and what depended on it)",
    ...replaced.map((s) => `- ${s.id}: ${s.title}: ${oneLine(s.description, 400)}`),
  ].join("\n");
}
