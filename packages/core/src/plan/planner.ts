import { PlanValidationError, StructuredOutputError } from "../errors/errors.js";
import {
  type TaskLedger,
  taskLedgerSchema,
  taskLedgerSchemaName,
  validateTaskLedger,
} from "../ledger/task-ledger.js";
import { callStructured } from "../model-call/structured-call.js";
import type { LanguageModel } from "../ports/model.js";
import { emptyUsage, type Usage } from "../usage/usage.js";
import { plannerRepairMessage, plannerSystemPrompt } from "./planner-prompts.js";
import { isTrivialRequest } from "./trivial-request.js";

/** `auto` skips the planning call for requests that are plainly one step. */
export type DecomposePolicy = "auto" | "always" | "never" | ((request: string) => boolean);

export interface PlanResult {
  ledger: TaskLedger;
  /** False when the request ran as a single sub-task without a planning call. */
  decomposed: boolean;
  /** True when the first plan was invalid and the repair call fixed it. */
  repaired: boolean;
  usage: Usage;
}

export interface PlanOptions {
  model: LanguageModel | undefined;
  request: string;
  maxSubTasks: number;
  decompose: DecomposePolicy;
  abortSignal: AbortSignal;
  /** The project digest's text, shown before the request. */
  project?: string | undefined;
  /** What a read-only session found in the project (`explore`), shown after the digest. */
  findings?: string | undefined;
}

export function shouldDecompose(policy: DecomposePolicy, request: string): boolean {
  if (typeof policy === "function") return policy(request);
  if (policy === "auto") return !isTrivialRequest(request);
  return policy === "always";
}

/** The ledger of a request that runs as it is, in one sub-task. */
export function singleSubTaskLedger(request: string): TaskLedger {
  const firstLine = request.trim().split("\n")[0] ?? "";
  return {
    subTasks: [
      {
        id: "task",
        title: firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine || "Task",
        description: request.trim(),
        successCriteria: ["Everything the request asks for is done."],
        dependsOn: [],
        checks: [],
      },
    ],
  };
}

/**
 * Turns a request into a validated Task Ledger: one structured call, and one repair call that
 * shows the model what was wrong. A plan still invalid after that is a `PlanValidationError`.
 */
export async function planRequest(options: PlanOptions): Promise<PlanResult> {
  const { model, request, maxSubTasks, abortSignal } = options;
  if (!model || !shouldDecompose(options.decompose, request)) {
    return {
      ledger: singleSubTaskLedger(request),
      decomposed: false,
      repaired: false,
      usage: emptyUsage(),
    };
  }
  const result = await askForLedger({
    model,
    system: plannerSystemPrompt(maxSubTasks),
    prompt: planningPrompt(request, options.project, options.findings),
    validate: (answer) => validateTaskLedger(answer, { maxSubTasks }),
    abortSignal,
  });
  return { ...result, decomposed: true };
}

/** The planner's input: the project digest and an exploration's findings when there are, then the request. */
export function planningPrompt(
  request: string,
  project: string | undefined,
  findings?: string,
): string {
  const parts: string[] = [];
  if (project)
    parts.push(`Project digest (made from the working directory without a model):\n${project}`);
  if (findings) {
    parts.push(
      `Findings of a read-only look at the project (an agent session; state what the plan rests on as facts):\n${findings}`,
    );
  }
  parts.push(`Request:\n${request}`);
  return parts.join("\n\n");
}

export interface LedgerCall {
  model: LanguageModel;
  system: string;
  prompt: string;
  /** Turns the model's answer into the ledger to use, or throws `PlanValidationError`. */
  validate: (answer: TaskLedger) => TaskLedger;
  abortSignal: AbortSignal;
}

/** One structured `task_ledger` call, repaired at most once; used for plans and for replans. */
export async function askForLedger(
  call: LedgerCall,
): Promise<{ ledger: TaskLedger; repaired: boolean; usage: Usage }> {
  try {
    const result = await callStructured({
      ...call,
      output: { name: taskLedgerSchemaName, schema: taskLedgerSchema },
      repairMessage: plannerRepairMessage,
      what: "Task Ledger",
    });
    return { ledger: result.value, repaired: result.repaired, usage: result.usage };
  } catch (error) {
    if (!StructuredOutputError.isInstance(error)) throw error;
    // One error type for "the plan cannot be used", whether it was not JSON or not a valid graph.
    throw new PlanValidationError([{ kind: "schema", message: error.message }], {
      context: "Invalid Task Ledger",
      cause: error,
      usage: error.usage,
    });
  }
}
