import { outcomeEvaluator } from "../attempt/outcome-evaluator.js";
import { InvalidConfigError } from "../errors/errors.js";
import type { CheckInput } from "../ledger/sub-task.js";
import { defaultMaxSubTasks } from "../ledger/task-ledger.js";
import type { ReviewPlan } from "../plan/plan-review.js";
import type { DecomposePolicy } from "../plan/planner.js";
import type { Evaluator } from "../ports/evaluator.js";
import type { Executor } from "../ports/executor.js";
import type { LanguageModel } from "../ports/model.js";
import type { ProjectSource } from "../ports/project-source.js";
import type { Sandbox } from "../ports/sandbox.js";
import type { Isolation, WorkspaceProvider } from "../ports/workspace.js";
import {
  checkFunction,
  checkObject,
  checkPart,
  describeGiven,
  refuseUnknownKeys,
} from "../settings/host-input-check.js";
import {
  type BestOfInput,
  defaultAcceptanceRounds,
  type IntegrationMode,
  type RunBudget,
  type RunSettings,
  resolveRunSettings,
} from "../settings/run-settings.js";
import { MemoryRunStore, type RunStore } from "../store/run-store.js";
import { sharedWorkspaces } from "../workspace/shared-workspace.js";

export type { RunBudget } from "../settings/run-settings.js";

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
  /** Checks every sub-task must pass besides its own (`{ type: "command", argv: ["npm", "test"] }`). */
  checks?: CheckInput[];
  /**
   * Tells the planner about the project before it plans: `projectDigests()` from
   * `@taskledger/git-workspace` (taskledger's createManager uses it). Its commands become the
   * checks of sub-tasks that change files unless `projectChecks` is false. False: none.
   */
  project?: ProjectSource | false;
  /** False: the project's own commands are never added to a sub-task's checks. Default true. */
  projectChecks?: boolean;
  /**
   * Before planning, one read-only agent session looks up what the plan needs; its findings go to
   * the planner. Bounded by `timeoutMs` (default 5 minutes) and the run's budgets. Default off.
   */
  explore?: boolean | { timeoutMs?: number };
  /**
   * Parallel candidates: a number (2 to 8) of attempts a risky sub-task gets at once, or the whole
   * setting (`for: "all"`, the `ladder` rung, the candidates' `models`). Needs git worktrees.
   */
  bestOf?: BestOfInput;
  /**
   * When the merged result is checked before work lands on the run's branch: `batch` (default;
   * completions close together gated together, a failing batch bisected), `each`, `end` (only the
   * final tip), `off`. The checks: the project's test and typecheck commands, the run's `checks`
   * and every completed sub-task's command checks.
   */
  integration?: IntegrationMode;
  /**
   * Once every sub-task is done, one judge call asks whether the request as a whole was met, and
   * what is missing is planned as new sub-tasks (`rounds`, default 1). Default on when there is a
   * `model`; false turns it off.
   */
  acceptance?: boolean | { rounds?: number };
  /** Replace a sub-task that still fails (and its dependents) by asking the model for new ones. */
  replan?: { enabled?: boolean; maxPerSubTask?: number; maxPerRun?: number };
  /** Approve, edit or reject the plan before it runs, and every replan before it applies. */
  reviewPlan?: ReviewPlan;
  /**
   * Working directory of the agents, unless `start`/`run` gives one. Required one way or the
   * other: a run without it fails with `InvalidConfigError` (a library never edits its host).
   */
  cwd?: string;
  /**
   * Where attempts work. `worktree`: each attempt in its own git worktree, completed work merged
   * into the run's branch; `shared`: all in `cwd`. Default `auto`: worktrees when `workspaces`
   * can isolate `cwd` (a git repository, with `gitWorkspaces()`), else shared with a notice.
   */
  isolation?: Isolation | "auto";
  /**
   * Makes each run's workspace. Core's default shares the directory; `gitWorkspaces()` from
   * `@taskledger/git-workspace` (taskledger's createManager uses it) gives each attempt a git
   * worktree holding the project's environment.
   */
  workspaces?: WorkspaceProvider;
  /** With worktrees, apply the run's change to the user's tree at the end. Default true. */
  apply?: boolean;
  /** Makes run ids. Default: a random UUID. */
  createRunId?: () => string;
  /**
   * The OS sandbox every attempt, check and exploration runs inside (`createSandbox()` from
   * `@taskledger/sandbox`). Its mode is logged with the run; a `required` one that cannot work
   * here fails the run with `SandboxUnavailableError` before any model call. Absent: unconfined.
   */
  sandbox?: Sandbox;
}

/** Every option `createManager` knows: a key missing here fails to compile, one not here is refused. */
const managerOptionKeys: Record<keyof ManagerOptions, true> = {
  model: true,
  executor: true,
  evaluator: true,
  store: true,
  concurrency: true,
  maxRetries: true,
  maxSubTasks: true,
  contextTokenBudget: true,
  maxRequestChars: true,
  budget: true,
  decompose: true,
  alternateAgentModels: true,
  checks: true,
  project: true,
  projectChecks: true,
  explore: true,
  integration: true,
  acceptance: true,
  bestOf: true,
  replan: true,
  reviewPlan: true,
  cwd: true,
  isolation: true,
  workspaces: true,
  apply: true,
  createRunId: true,
  sandbox: true,
};

/**
 * The parts a host plugs in, checked before anything runs: unknown keys refused by name, and a
 * model, evaluator, store or hook that is not one an `InvalidConfigError` naming the field.
 */
function checkHostParts(options: ManagerOptions): void {
  checkObject("createManager(options)", options);
  refuseUnknownKeys(options, managerOptionKeys, "createManager");
  if (typeof options.executor?.run !== "function") {
    throw new InvalidConfigError(
      `\`executor\` is required: an object with a \`run\` method; got ${describeGiven(options.executor)}.`,
    );
  }
  checkPart("model", options.model, ["generate"]);
  for (const field of ["provider", "modelId"] as const) {
    const value = options.model?.[field];
    if (options.model && (typeof value !== "string" || value === "")) {
      throw new InvalidConfigError(
        `\`model.${field}\` must be a non-empty string; got ${describeGiven(value)}.`,
      );
    }
  }
  checkPart("evaluator", options.evaluator, ["evaluate"]);
  checkPart("store", options.store, ["append", "read"]);
  if (options.project !== false) checkPart("project", options.project, ["digest"]);
  checkFunction("reviewPlan", options.reviewPlan);
  checkFunction("createRunId", options.createRunId);
  checkPart("sandbox", options.sandbox, ["status", "wrap", "close"]);
}

export interface ResolvedManagerOptions {
  model: LanguageModel | undefined;
  executor: Executor;
  evaluator: Evaluator;
  store: RunStore;
  /** The settings a new run gets; a resumed run gets the ones it logged. */
  settings: RunSettings;
  maxRequestChars: number;
  decompose: DecomposePolicy;
  cwd: string | undefined;
  isolation: Isolation | "auto";
  workspaces: WorkspaceProvider;
  apply: boolean;
  createRunId: () => string;
  reviewPlan: ReviewPlan | undefined;
  project: ProjectSource | undefined;
  sandbox: Sandbox | undefined;
}

/** How long the exploration before a plan may take unless the host says. */
export const defaultExploreTimeoutMs = 300_000;

/** The defaults of every run setting, before a manager's options are laid over them. */
export const defaultRunSettings: RunSettings = {
  concurrency: 3,
  maxRetries: 2,
  maxSubTasks: defaultMaxSubTasks,
  contextTokenBudget: 4000,
  budget: {},
  decompose: "auto",
  alternateAgentModels: [],
  replan: { enabled: true, maxPerSubTask: 1, maxPerRun: 3 },
  integration: "batch",
};

export function resolveManagerOptions(options: ManagerOptions): ResolvedManagerOptions {
  checkHostParts(options);
  const decompose = options.decompose ?? "auto";
  const settings = resolveRunSettings(
    {
      ...defaultRunSettings,
      decompose: typeof decompose === "function" ? "function" : decompose,
    },
    {
      ...pick(options, [
        "concurrency",
        "maxRetries",
        "maxSubTasks",
        "contextTokenBudget",
        "budget",
        "alternateAgentModels",
        "checks",
        "projectChecks",
        "integration",
        "bestOf",
      ]),
      ...acceptanceOption(options),
      ...(options.replan ? { replan: options.replan } : {}),
      ...(options.explore
        ? {
            explore: {
              timeoutMs:
                (typeof options.explore === "object" ? options.explore.timeoutMs : undefined) ??
                defaultExploreTimeoutMs,
            },
          }
        : {}),
    },
  );
  const maxRequestChars = options.maxRequestChars ?? 100_000;
  if (!Number.isInteger(maxRequestChars) || maxRequestChars < 1 || maxRequestChars > 10_000_000) {
    throw new InvalidConfigError(
      `\`maxRequestChars\` must be an integer from 1 to 10000000; got ${describeGiven(maxRequestChars)}.`,
    );
  }
  if (decompose === "always" && !options.model) {
    throw new InvalidConfigError('`decompose: "always"` needs a `model` to plan with.');
  }
  const isolation = options.isolation ?? "auto";
  if (!["auto", "shared", "worktree"].includes(isolation)) {
    throw new InvalidConfigError(
      `\`isolation\` must be "auto", "shared" or "worktree"; got ${JSON.stringify(isolation)}.`,
    );
  }
  // Run-wide checks no evaluator runs would pass unrun: refused, as a plan's checks are.
  if (options.checks?.length && (options.evaluator ?? outcomeEvaluator) === outcomeEvaluator) {
    throw new InvalidConfigError(
      "`checks` need an evaluator that runs them; core's default outcomeEvaluator runs none: give `evaluator: createEvaluator({ model })` from @taskledger/evaluator, or use `createManager` from taskledger, which does.",
    );
  }
  const workspaces = options.workspaces ?? sharedWorkspaces;
  if (typeof workspaces?.open !== "function") {
    throw new InvalidConfigError("`workspaces` must be an object with an `open` method.");
  }
  if (isolation === "worktree" && !workspaces.isolates) {
    throw new InvalidConfigError(
      '`isolation: "worktree"` needs a workspace provider that isolates: pass `workspaces: gitWorkspaces()` from @taskledger/git-workspace.',
    );
  }
  return {
    model: options.model,
    executor: options.executor,
    evaluator: options.evaluator ?? outcomeEvaluator,
    store: options.store ?? new MemoryRunStore(),
    settings,
    maxRequestChars,
    decompose,
    cwd: options.cwd,
    isolation,
    workspaces,
    apply: options.apply ?? true,
    createRunId: options.createRunId ?? (() => crypto.randomUUID()),
    reviewPlan: options.reviewPlan,
    project: options.project || undefined,
    sandbox: options.sandbox,
  };
}

/** On by default with a model to judge with; asked for without one, refused. */
function acceptanceOption(options: ManagerOptions): { acceptance?: boolean | { rounds: number } } {
  const given = options.acceptance;
  if (given === false) return { acceptance: false };
  if (given !== undefined && given !== true && (typeof given !== "object" || given === null))
    return { acceptance: given };
  if (!options.model) {
    if (given === undefined) return { acceptance: false };
    throw new InvalidConfigError(
      "`acceptance` needs a `model` to judge the request with: give `model`, or leave `acceptance` out.",
    );
  }
  if (given === undefined || given === true)
    return { acceptance: { rounds: defaultAcceptanceRounds } };
  return { acceptance: { rounds: given.rounds ?? defaultAcceptanceRounds } };
}

function pick<T extends object, K extends keyof T>(
  object: T,
  keys: readonly K[],
): Partial<Pick<T, K>> {
  const picked: Partial<Pick<T, K>> = {};
  for (const key of keys) if (object[key] !== undefined) picked[key] = object[key];
  return picked;
}
