import { InvalidConfigError } from "./errors.js";
import { type Evaluator, outcomeEvaluator } from "./evaluator.js";
import type { Executor } from "./executor.js";
import type { LanguageModel } from "./model.js";
import type { ReviewPlan } from "./plan-review.js";
import type { DecomposePolicy } from "./planner.js";
import { MemoryRunStore, type RunStore } from "./run-store.js";
import { defaultMaxSubTasks } from "./task-ledger.js";

export interface RunBudget {
  /** Total tokens (manager and agents, all kinds) after which nothing new starts. */
  maxTokens?: number;
  /** Wall time of the whole run; when it passes, running attempts are stopped. */
  maxDurationMs?: number;
}

export interface ManagerOptions {
  /** Plans the request (and judges attempts, with `@taskledger/evaluator`). */
  model?: LanguageModel;
  /** Runs one attempt of one sub-task, normally `@taskledger/executor`'s opencode executor. */
  executor: Executor;
  /** Judges each attempt. Default: complete when the agent finished on its own. */
  evaluator?: Evaluator;
  /** Where each state change is appended. Default: in memory. */
  store?: RunStore;
  /** Sub-tasks running at once. Default 3. */
  concurrency?: number;
  /** Attempts after the first for an incomplete sub-task. Default 2. */
  maxRetries?: number;
  /** Largest plan accepted. Default 20. */
  maxSubTasks?: number;
  /** Tokens of dependencies' output passed into one prompt. Default 4000. */
  contextTokenBudget?: number;
  /** Longest request accepted, in characters. Default 100,000. */
  maxRequestChars?: number;
  budget?: RunBudget;
  /** Whether to plan sub-tasks or run the request as one. Default `auto`. */
  decompose?: DecomposePolicy;
  /**
   * Agent models to try, one attempt each, when retries on the executor's own model did not finish
   * a sub-task (or made no progress), before a replan. Passed to the executor as `agentModel`.
   */
  alternateAgentModels?: string[];
  /** Replace a sub-task that still fails (and its dependents) by asking the model for new ones. */
  replan?: { enabled?: boolean; maxPerSubTask?: number; maxPerRun?: number };
  /** Approve, edit or reject the plan before it runs, and every replan before it applies. */
  reviewPlan?: ReviewPlan;
  /** Working directory of the agents. Default `process.cwd()` at run start. */
  cwd?: string;
  /** Makes run ids. Default: a random UUID. */
  createRunId?: () => string;
}

export interface ResolvedManagerOptions {
  model: LanguageModel | undefined;
  executor: Executor;
  evaluator: Evaluator;
  store: RunStore;
  concurrency: number;
  maxRetries: number;
  maxSubTasks: number;
  contextTokenBudget: number;
  maxRequestChars: number;
  budget: RunBudget;
  decompose: DecomposePolicy;
  cwd: string | undefined;
  createRunId: () => string;
  alternateAgentModels: string[];
  /** Replanning is on only with a model to ask. */
  replan: { enabled: boolean; maxPerSubTask: number; maxPerRun: number };
  reviewPlan: ReviewPlan | undefined;
}

export function resolveManagerOptions(options: ManagerOptions): ResolvedManagerOptions {
  if (!options || typeof options.executor?.run !== "function") {
    throw new InvalidConfigError("`executor` is required: an object with a `run` method.");
  }
  const resolved: ResolvedManagerOptions = {
    model: options.model,
    executor: options.executor,
    evaluator: options.evaluator ?? outcomeEvaluator,
    store: options.store ?? new MemoryRunStore(),
    concurrency: integer("concurrency", options.concurrency, 3, 1, 256),
    maxRetries: integer("maxRetries", options.maxRetries, 2, 0, 20),
    maxSubTasks: integer("maxSubTasks", options.maxSubTasks, defaultMaxSubTasks, 1, 100_000),
    contextTokenBudget: integer(
      "contextTokenBudget",
      options.contextTokenBudget,
      4000,
      0,
      1_000_000,
    ),
    maxRequestChars: integer("maxRequestChars", options.maxRequestChars, 100_000, 1, 10_000_000),
    budget: {
      ...(options.budget?.maxTokens === undefined
        ? {}
        : {
            maxTokens: integer(
              "budget.maxTokens",
              options.budget.maxTokens,
              0,
              1,
              Number.MAX_SAFE_INTEGER,
            ),
          }),
      ...(options.budget?.maxDurationMs === undefined
        ? {}
        : {
            maxDurationMs: integer(
              "budget.maxDurationMs",
              options.budget.maxDurationMs,
              0,
              1,
              2 ** 31 - 1,
            ),
          }),
    },
    decompose: options.decompose ?? "auto",
    cwd: options.cwd,
    createRunId: options.createRunId ?? (() => crypto.randomUUID()),
    alternateAgentModels: [...(options.alternateAgentModels ?? [])],
    replan: {
      enabled: options.model !== undefined && options.replan?.enabled !== false,
      maxPerSubTask: integer("replan.maxPerSubTask", options.replan?.maxPerSubTask, 1, 0, 10),
      maxPerRun: integer("replan.maxPerRun", options.replan?.maxPerRun, 3, 0, 100),
    },
    reviewPlan: options.reviewPlan,
  };
  if (resolved.decompose === "always" && !resolved.model) {
    throw new InvalidConfigError('`decompose: "always"` needs a `model` to plan with.');
  }
  return resolved;
}

function integer(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidConfigError(
      `\`${name}\` must be an integer from ${min} to ${max}; got ${value}.`,
    );
  }
  return value;
}
