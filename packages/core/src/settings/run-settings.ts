import { InvalidConfigError } from "../errors/errors.js";
import { type Check, type CheckInput, checkSchema } from "../ledger/sub-task.js";
import { checkObject, describeGiven, refuseUnknownKeys } from "./host-input-check.js";

/** What a run needs beyond its model, executor, evaluator and store; logged in its first record. */
export interface RunSettings {
  concurrency: number;
  maxRetries: number;
  maxSubTasks: number;
  contextTokenBudget: number;
  budget: RunBudget;
  /** `function` when the host decides with code, which cannot be logged: resume uses its own. */
  decompose: "auto" | "always" | "never" | "function";
  alternateAgentModels: string[];
  replan: { enabled: boolean; maxPerSubTask: number; maxPerRun: number };
  /** Checks every sub-task must pass besides its own (a project's `npm run typecheck`, say). */
  checks?: Check[];
  /**
   * False: the project's own test and typecheck commands (found by the project digest) are not
   * added to the checks of a sub-task that changes files.
   */
  projectChecks?: boolean;
  /** A read-only agent session looks things up before the plan, stopped after `timeoutMs`. */
  explore?: { timeoutMs: number };
  /**
   * When the merged result is checked: `batch` (completions close together are gated together, a
   * failing batch bisected), `each` (one merge at a time), `end` (only the final tip), `off`.
   * Absent (logs written before it existed): `off`.
   */
  integration?: IntegrationMode;
  /**
   * Once every sub-task is done, one judge call asks whether the request as a whole was met;
   * `rounds` of missing work may be planned on top. Absent: no acceptance.
   */
  acceptance?: { rounds: number };
  /** Parallel candidates for hard sub-tasks, one chosen by evidence; absent: one attempt at a time. */
  bestOf?: BestOf;
  /**
   * The host's own settings (the CLI keeps its provider, models and base URL here), as JSON.
   * Never a key or any other secret: those come from the environment when the run resumes.
   */
  host?: Record<string, unknown>;
}

export const integrationModes = ["batch", "each", "end", "off"] as const;
/** When the integration gate checks the merged result (see `RunSettings.integration`). */
export type IntegrationMode = (typeof integrationModes)[number];

/** How many candidates a sub-task gets at once, which sub-tasks, and on which agent models. */
export interface BestOf {
  /** Candidates per round, 2 to 8. */
  candidates: number;
  /** `risky`: sub-tasks the planner marked risky get a round first; `all`: every sub-task does. */
  for: "risky" | "all";
  /**
   * A rung of the escalation ladder: once retries on the executor's model fail, one round of
   * candidates before an alternate model or a replan.
   */
  ladder: boolean;
  /** The candidates' agent models, in turn (empty: the executor's own, for every candidate). */
  models: string[];
}

/** What a host may give for `bestOf`: a number of candidates, or the whole setting. */
export type BestOfInput = number | (Partial<BestOf> & { candidates: number });

export const maxCandidates = 8;

export interface RunBudget {
  /** Total tokens (manager and agents, all kinds) after which nothing new starts. */
  maxTokens?: number;
  /** Wall time of the whole run; when it passes, running attempts are stopped. */
  maxDurationMs?: number;
  /**
   * US dollars (manager and agents) after which nothing new starts. Only priced calls count:
   * tokens of a model with no known price are in the report's `unpricedModels`, not here.
   */
  maxCostUsd?: number;
}

/** Settings a host may give one run (or a resume), over the manager's or the logged ones. */
export type RunSettingsInput = Partial<
  Omit<RunSettings, "decompose" | "replan" | "bestOf" | "checks" | "acceptance">
> & {
  /** False: no acceptance; true: one round; or how many rounds of missing work (0 to 5). */
  acceptance?: boolean | { rounds: number };
  // Parsed here: what the schema defaults may be left out.
  checks?: CheckInput[];
  replan?: Partial<RunSettings["replan"]>;
  bestOf?: BestOfInput;
};

/** Checks `input` and lays it over `base`; a bad value is an `InvalidConfigError` naming it. */
export function resolveRunSettings(base: RunSettings, input: RunSettingsInput = {}): RunSettings {
  checkSettingsKeys(input);
  const budget = { ...base.budget, ...input.budget };
  return {
    concurrency: integer("concurrency", input.concurrency, base.concurrency, 1, 256),
    maxRetries: integer("maxRetries", input.maxRetries, base.maxRetries, 0, 20),
    maxSubTasks: integer("maxSubTasks", input.maxSubTasks, base.maxSubTasks, 1, 100_000),
    contextTokenBudget: integer(
      "contextTokenBudget",
      input.contextTokenBudget,
      base.contextTokenBudget,
      0,
      1_000_000,
    ),
    budget: {
      ...(budget.maxTokens === undefined
        ? {}
        : {
            maxTokens: integer("budget.maxTokens", budget.maxTokens, 0, 1, Number.MAX_SAFE_INTEGER),
          }),
      ...(budget.maxDurationMs === undefined
        ? {}
        : {
            maxDurationMs: integer("budget.maxDurationMs", budget.maxDurationMs, 0, 1, 2 ** 31 - 1),
          }),
      ...(budget.maxCostUsd === undefined
        ? {}
        : { maxCostUsd: dollars("budget.maxCostUsd", budget.maxCostUsd) }),
    },
    decompose: base.decompose,
    alternateAgentModels: [...(input.alternateAgentModels ?? base.alternateAgentModels)],
    replan: {
      enabled: input.replan?.enabled ?? base.replan.enabled,
      maxPerSubTask: integer(
        "replan.maxPerSubTask",
        input.replan?.maxPerSubTask,
        base.replan.maxPerSubTask,
        0,
        10,
      ),
      maxPerRun: integer(
        "replan.maxPerRun",
        input.replan?.maxPerRun,
        base.replan.maxPerRun,
        0,
        100,
      ),
    },
    ...runChecks(input.checks ?? base.checks),
    ...((input.projectChecks ?? base.projectChecks) === false ? { projectChecks: false } : {}),
    ...exploreSetting(input.explore ?? base.explore),
    ...integrationSetting(input.integration ?? base.integration),
    ...acceptanceSetting(input.acceptance ?? base.acceptance),
    ...bestOfSetting(input.bestOf ?? base.bestOf),
    ...((input.host ?? base.host) ? { host: structuredClone(input.host ?? base.host) } : {}),
  };
}

const settingsKeys: Record<keyof RunSettingsInput, true> = {
  concurrency: true,
  maxRetries: true,
  maxSubTasks: true,
  contextTokenBudget: true,
  budget: true,
  alternateAgentModels: true,
  replan: true,
  checks: true,
  projectChecks: true,
  explore: true,
  integration: true,
  acceptance: true,
  bestOf: true,
  host: true,
};
const budgetKeys: Record<keyof RunBudget, true> = {
  maxTokens: true,
  maxDurationMs: true,
  maxCostUsd: true,
};
const replanKeys: Record<keyof RunSettings["replan"], true> = {
  enabled: true,
  maxPerSubTask: true,
  maxPerRun: true,
};

/** A misspelt setting (`concurency`, `budget.maxCost`) is refused by name, never ignored. */
function checkSettingsKeys(input: RunSettingsInput): void {
  checkObject("settings", input);
  refuseUnknownKeys(input, settingsKeys, "settings");
  for (const [field, known] of [
    ["budget", budgetKeys],
    ["replan", replanKeys],
  ] as const) {
    const value = input[field];
    if (value === undefined) continue;
    checkObject(field, value);
    refuseUnknownKeys(value, known, `\`${field}\``);
  }
}

function exploreSetting(explore: RunSettings["explore"]): Pick<RunSettings, "explore"> {
  if (explore === undefined) return {};
  return {
    explore: {
      timeoutMs: integer("explore.timeoutMs", explore.timeoutMs, 300_000, 1000, 3_600_000),
    },
  };
}

function integrationSetting(mode: unknown): Pick<RunSettings, "integration"> {
  if (mode === undefined) return {};
  if (!integrationModes.includes(mode as IntegrationMode)) {
    throw new InvalidConfigError(
      `\`integration\` must be ${integrationModes.map((m) => `"${m}"`).join(", ")}; got ${describeGiven(mode)}.`,
    );
  }
  return { integration: mode as IntegrationMode };
}

/** The acceptance's rounds: `true` is the default one, `false` none. */
export const defaultAcceptanceRounds = 1;
const maxAcceptanceRounds = 5;

function acceptanceSetting(input: unknown): Pick<RunSettings, "acceptance"> {
  if (input === undefined || input === false) return {};
  if (input === true) return { acceptance: { rounds: defaultAcceptanceRounds } };
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new InvalidConfigError(
      `\`acceptance\` must be true, false or { rounds }; got ${describeGiven(input)}.`,
    );
  }
  refuseUnknownKeys(input, { rounds: true }, "`acceptance`");
  const rounds = integer(
    "acceptance.rounds",
    (input as { rounds?: number }).rounds,
    defaultAcceptanceRounds,
    0,
    maxAcceptanceRounds,
  );
  return { acceptance: { rounds } };
}

function bestOfSetting(input: BestOfInput | undefined): Pick<RunSettings, "bestOf"> {
  if (input === undefined) return {};
  const given = typeof input === "number" ? { candidates: input } : input;
  if (!given || typeof given !== "object")
    throw new InvalidConfigError(`\`bestOf\` must be a number or an object; got ${String(input)}.`);
  const candidates = integer("bestOf.candidates", given.candidates, 1, 1, maxCandidates);
  const scope = given.for ?? "risky";
  if (scope !== "risky" && scope !== "all")
    throw new InvalidConfigError(
      `\`bestOf.for\` must be "risky" or "all"; got ${JSON.stringify(scope)}.`,
    );
  const models = given.models ?? [];
  if (
    !Array.isArray(models) ||
    models.length > maxCandidates ||
    models.some((m) => typeof m !== "string" || m.trim() === "")
  ) {
    throw new InvalidConfigError(
      `\`bestOf.models\` must be up to ${maxCandidates} non-empty model names; got ${JSON.stringify(models)}.`,
    );
  }
  // One candidate is an ordinary attempt: nothing to choose between.
  if (candidates === 1) return {};
  return {
    bestOf: { candidates, for: scope, ladder: given.ladder ?? true, models: [...models] },
  };
}

// As many as a sub-task may declare: each runs after every attempt.
const maxRunChecks = 20;

function runChecks(checks: unknown): { checks?: Check[] } {
  if (checks === undefined) return {};
  const parsed = checkSchema.array().max(maxRunChecks).safeParse(checks);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidConfigError(
      `\`checks\` must be up to ${maxRunChecks} checks like a sub-task's: ${issue?.path.join(".") || "(top)"}: ${issue?.message}`,
    );
  }
  return parsed.data.length > 0 ? { checks: parsed.data } : {};
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
      `\`${name}\` must be an integer from ${min} to ${max}; got ${describeGiven(value)}.`,
    );
  }
  return value;
}

function dollars(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > 1_000_000) {
    throw new InvalidConfigError(
      `\`${name}\` must be a number of US dollars above 0 and at most 1000000; got ${describeGiven(value)}.`,
    );
  }
  return value;
}
