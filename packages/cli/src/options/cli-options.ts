import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import {
  type BestOf,
  type Check,
  defaultRunSettings,
  type ModelPrice,
  type PriceTable,
} from "@taskledger/core";
import { type AgentName, agentNames, parseAgentModel } from "@taskledger/executor";
import type { SetupOptions, SlotLimits } from "@taskledger/git-workspace";
import { defaultModels, type Provider } from "@taskledger/llm";
import { loadQueue } from "../runtime/queue-module.js";
import { type AgentEnvDefaults, type AgentEnvFlags, agentEnvOf } from "./agent-env-options.js";
import { type BestOfDefaults, type BestOfFlags, bestOfOf } from "./best-of-options.js";
import { type EnvironmentDefaults, environmentOf } from "./environment-options.js";
import {
  type IntegrationChoice,
  type IntegrationDefaults,
  type IntegrationFlags,
  integrationOf,
} from "./integration-options.js";
import {
  type SandboxChoice,
  type SandboxDefaults,
  type SandboxFlags,
  sandboxOf,
} from "./sandbox-options.js";
import { UsageError } from "./usage-error.js";

export const providers: readonly Provider[] = [
  "anthropic",
  "openai",
  "google",
  "xai",
  "openai-compatible",
];

export { UsageError } from "./usage-error.js";

/** `--no-daemon` as the command line parses it. */
export interface DaemonFlag {
  daemon?: boolean;
}

/** A run's choice: agent servers in the per-user daemon (kept warm between runs), or in-process. */
export interface DaemonChoice {
  daemon: boolean;
}

export interface RawRunOptions
  extends BestOfFlags,
    IntegrationFlags,
    AgentEnvFlags,
    SandboxFlags,
    DaemonFlag {
  provider?: string;
  model?: string;
  baseUrl?: string;
  agentModel?: string;
  agent?: string;
  opencodeConfig?: string;
  cwd?: string;
  concurrency?: string;
  maxRetries?: string;
  maxSubTasks?: string;
  store?: string;
  json?: boolean;
  yes?: boolean;
  dryRun?: boolean;
  alternateAgentModel?: string[];
  replan?: boolean;
  /** `--no-project-checks` sets it false. */
  projectChecks?: boolean;
  /** `--explore`. */
  explore?: boolean;
  requestFile?: string;
  isolation?: string;
  apply?: boolean;
  executor?: string;
  maxCost?: string;
  prices?: string;
  otlp?: string;
  redis?: string;
  remote?: string;
  redisTimeout?: string;
  stalledCheck?: string;
  workerWait?: string;
  setup?: string;
  include?: string[];
  /** `--no-dependencies` sets it false; commander's default is true. */
  dependencies?: boolean;
  /** `--no-keep-slots` sets it false. */
  keepSlots?: boolean;
  /** `--config FILE`, or false for `--no-config`. */
  config?: string | boolean;
}

/** What the project config file gives a run, under the options given on the command line. */
export interface ProjectDefaults
  extends EnvironmentDefaults,
    AgentEnvDefaults,
    IntegrationDefaults {
  path: string;
  checks?: Check[];
  projectChecks?: boolean;
  explore?: boolean;
  agentModel?: string;
  concurrency?: number;
  isolation?: "auto" | "worktree" | "shared";
  bestOf?: BestOfDefaults;
  sandbox?: SandboxDefaults;
}

/** How attempts run: a fresh `opencode run` process each, or a session in a running `opencode serve`. */
export type ExecutorKind = "cli" | "server";
export const executorKinds: readonly ExecutorKind[] = ["cli", "server"];

export interface RunOptions extends AgentEnvDefaults, DaemonChoice, IntegrationChoice {
  provider: Provider;
  model: string;
  baseURL: string | undefined;
  /** The coding agent every attempt runs on unless an alternate model names another. */
  agent: AgentName;
  /**
   * Where Claude Code and Codex send their model calls instead of their vendor, with the key they
   * send (the demo's scripted server); opencode's is in its config.
   */
  agentEndpoint?: { anthropicBaseURL: string; openaiBaseURL: string; key: string };
  /**
   * opencode: `provider/model`, by default the provider's agent default (or the manager's model
   * when `--model` is given); Claude Code and Codex: a model name of theirs.
   */
  agentModel: string;
  opencodeConfig: Record<string, unknown> | undefined;
  cwd: string;
  concurrency: number;
  maxRetries: number;
  /** Largest plan (or plan after a replan or an edit) the run accepts. */
  maxSubTasks: number;
  store: string | undefined;
  json: boolean;
  yes: boolean;
  dryRun: boolean;
  /** Agent models to try once each when retries did not finish a sub-task. */
  alternateAgentModels: string[];
  replan: boolean;
  /** The project's own test and typecheck commands join the checks of sub-tasks that change files. */
  projectChecks: boolean;
  /** A read-only agent session looks around before the plan. */
  explore: boolean;
  /** Parallel candidates for risky (or all) sub-tasks; undefined: one attempt at a time. */
  bestOf: BestOf | undefined;
  /** Where attempts work: `auto` (worktrees in a git repository), `worktree` or `shared`. */
  isolation: "auto" | "worktree" | "shared";
  /** With worktrees, apply the run's change to the working tree at the end. */
  apply: boolean;
  executor: ExecutorKind;
  /** Money budget of the run, in US dollars. */
  maxCostUsd: number | undefined;
  /** The host's prices for private or new models, over the bundled price table. */
  prices: PriceTable | undefined;
  /** OTLP/HTTP traces endpoint (`http://host:4318/v1/traces`) to export the run's spans to. */
  otlp: string | undefined;
  /** Attempts go to `taskledger worker`s through Redis, their work through the git remote. */
  queue:
    | {
        redis: string;
        remote: string;
        unreachableAfterMs: number;
        stalledCheckMs: number;
        workerWaitMs: number;
      }
    | undefined;
  /** What each worktree gets of the project's environment. */
  environment: {
    dependencies: boolean;
    include: string[];
    setup: SetupOptions | undefined;
    /** Worktree slots kept between runs, bounded; false: made and removed by each run. */
    slots?: false | Partial<SlotLimits>;
  };
  /** Checks every sub-task must pass besides its own (from the project config). */
  checks: Check[] | undefined;
  /** The project config file the options came from, if any. */
  configPath: string | undefined;
  /** The OS sandbox around every attempt, check and setup: its mode and the hosts allowed. */
  sandbox: SandboxChoice;
}

// Core takes more; a plan past this many steps is no longer one a person can review.
export const maxSubTasksLimit = 100;

export async function parseRunOptions(
  given: RawRunOptions,
  cwd: string,
  project?: ProjectDefaults,
): Promise<RunOptions> {
  // The project config fills what the command line left out.
  const raw: RawRunOptions = {
    ...given,
    ...(given.agentModel === undefined && project?.agentModel
      ? { agentModel: project.agentModel }
      : {}),
    ...(given.concurrency === undefined && project?.concurrency !== undefined
      ? { concurrency: String(project.concurrency) }
      : {}),
    ...(given.isolation === undefined && project?.isolation
      ? { isolation: project.isolation }
      : {}),
  };
  const provider = (raw.provider ?? "anthropic") as Provider;
  if (!providers.includes(provider)) {
    throw new UsageError(
      `--provider must be one of ${providers.join(", ")}; got "${raw.provider}"`,
    );
  }
  const defaults = provider === "openai-compatible" ? undefined : defaultModels[provider];
  const model = raw.model ?? defaults?.manager;
  if (!model) throw new UsageError(`--model is required with --provider ${provider}`);
  if (provider === "openai-compatible" && !raw.baseUrl) {
    throw new UsageError("--base-url is required with --provider openai-compatible");
  }
  const agent = agentOf(raw.agent);
  const agentModel = raw.agentModel ?? defaultAgentModel(agent, provider, raw.model, model);
  checkAgentModel("--agent-model", agent, agentModel);
  const options: RunOptions = {
    provider,
    model,
    baseURL: raw.baseUrl,
    agent,
    agentModel,
    opencodeConfig: raw.opencodeConfig
      ? await readConfig(resolve(cwd, raw.opencodeConfig), "--opencode-config")
      : undefined,
    cwd: resolve(cwd, raw.cwd ?? "."),
    concurrency: integer("--concurrency", raw.concurrency, 3, 1, 64),
    maxRetries: integer("--max-retries", raw.maxRetries, 2, 0, 20),
    maxSubTasks: integer(
      "--max-sub-tasks",
      raw.maxSubTasks,
      defaultRunSettings.maxSubTasks,
      1,
      maxSubTasksLimit,
    ),
    store: raw.store === undefined ? undefined : resolve(cwd, raw.store),
    json: raw.json === true,
    yes: raw.yes === true,
    dryRun: raw.dryRun === true,
    alternateAgentModels: (raw.alternateAgentModel ?? []).map((value) => {
      const named = parseAgentModelOption(value);
      checkAgentModel("--alternate-agent-model", named.agent ?? agent, named.model);
      // Named in full, so a worker that takes the attempt runs it on the same agent.
      return named.agent || agent === "opencode" ? value : `${agent}:${value}`;
    }),
    replan: raw.replan !== false,
    projectChecks: raw.projectChecks === false ? false : (project?.projectChecks ?? true),
    explore: raw.explore === true || project?.explore === true,
    bestOf: bestOfOf(raw, project?.bestOf, agent, checkAgentModel),
    ...integrationOf(raw, project),
    ...queueOf(raw),
    apply: raw.apply !== false,
    executor: executorKind(raw.executor),
    maxCostUsd: raw.maxCost === undefined ? undefined : dollars(raw.maxCost),
    prices: raw.prices ? await readPrices(resolve(cwd, raw.prices)) : undefined,
    otlp: raw.otlp === undefined ? undefined : otlpUrl(raw.otlp),
    environment: environmentOf(raw, project),
    checks: project?.checks,
    configPath: project?.path,
    ...agentEnvOf(raw, project),
    sandbox: sandboxOf(raw, project?.sandbox),
    daemon: raw.daemon !== false,
  };
  // Loaded here, where reading options may wait, for the synchronous runtime that builds the run.
  if (options.queue) await loadQueue();
  return options;
}

/** `--redis` and `--remote` go together, and attempts on workers need worktrees. */
function queueOf(raw: RawRunOptions): Pick<RunOptions, "queue" | "isolation"> {
  const isolation = isolationOf(raw.isolation);
  if (raw.redis === undefined && raw.remote === undefined) return { queue: undefined, isolation };
  if (raw.redis === undefined || raw.remote === undefined)
    throw new UsageError(
      "--redis and --remote go together: the queue and the git remote workers fetch from",
    );
  if (!/^rediss?:\/\//.test(raw.redis))
    throw new UsageError("--redis must be a redis:// or rediss:// URL");
  if (isolation === "shared")
    throw new UsageError("--redis needs worktree isolation: attempts travel as git commits");
  const unreachableAfterMs = integer("--redis-timeout", raw.redisTimeout, 30_000, 100, 3_600_000);
  const stalledCheckMs = integer("--stalled-check", raw.stalledCheck, 30_000, 100, 3_600_000);
  const workerWaitMs = integer("--worker-wait", raw.workerWait, 300_000, 100, 86_400_000);
  return {
    queue: {
      redis: raw.redis,
      remote: raw.remote,
      unreachableAfterMs,
      stalledCheckMs,
      workerWaitMs,
    },
    isolation: "worktree",
  };
}

function isolationOf(value: string | undefined): RunOptions["isolation"] {
  if (value === undefined) return "auto";
  if (value === "auto" || value === "worktree" || value === "shared") return value;
  throw new UsageError(`--isolation must be auto, worktree or shared; got "${value}"`);
}

function agentOf(value: string | undefined): AgentName {
  if (value === undefined) return "opencode";
  if (!agentNames.includes(value as AgentName)) {
    throw new UsageError(`--agent must be one of ${agentNames.join(", ")}; got "${value}"`);
  }
  return value as AgentName;
}

/** Claude Code takes an alias (`sonnet`); Codex's model names change, so a Codex run names one. */
function defaultAgentModel(
  agent: AgentName,
  provider: Provider,
  givenModel: string | undefined,
  model: string,
): string {
  if (agent === "claude-code") return "sonnet";
  if (agent === "codex") throw new UsageError("--agent-model is required with --agent codex");
  const defaults = provider === "openai-compatible" ? undefined : defaultModels[provider];
  return `${provider}/${givenModel === undefined && defaults ? defaults.agent : model}`;
}

function parseAgentModelOption(value: string): ReturnType<typeof parseAgentModel> {
  try {
    return parseAgentModel(value);
  } catch (error) {
    throw new UsageError(`--alternate-agent-model: ${(error as Error).message}`);
  }
}

/** opencode takes `provider/model`; Claude Code and Codex a model name of their own. */
function checkAgentModel(flag: string, agent: AgentName, model: string): void {
  if (agent === "opencode" && !/^[^/\s]+\/\S+$/.test(model)) {
    throw new UsageError(`${flag} must look like provider/model for opencode; got "${model}"`);
  }
  if (!/^\S+$/.test(model)) throw new UsageError(`${flag} must be a model name; got "${model}"`);
}

function executorKind(value: string | undefined): ExecutorKind {
  // Sessions in running servers start in ~0.1 s where a process per attempt takes ~3 s.
  if (value === undefined) return "server";
  if (!executorKinds.includes(value as ExecutorKind)) {
    throw new UsageError(`--executor must be one of ${executorKinds.join(", ")}; got "${value}"`);
  }
  return value as ExecutorKind;
}

function dollars(value: string): number {
  const n = Number(value.replace(/^\$/, ""));
  if (!Number.isFinite(n) || n <= 0 || n > 1_000_000) {
    throw new UsageError(`--max-cost must be US dollars above 0, such as 2.50; got "${value}"`);
  }
  return n;
}

/** `--otlp`: an http(s) URL; a collector's base URL gets the standard traces path. */
function otlpUrl(value: string, name = "--otlp"): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} must be an http(s) URL; got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`${name} must be an http(s) URL; got "${value}"`);
  }
  // A collector's base URL gets the standard traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces";
  return url.toString();
}

/**
 * Where spans go without `--otlp`: OpenTelemetry's own variables, the traces endpoint as it is,
 * else the base endpoint with `v1/traces` appended; none when `OTEL_SDK_DISABLED` is true.
 */
export function otlpFromEnv(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) {
    otlpUrl(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    return traces;
  }
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  otlpUrl(base, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/$/, "")}/v1/traces`;
  return url.toString();
}

/** `--prices FILE`: `{ "provider/model": { "inputPerMillion": 3, "outputPerMillion": 15 } }`. */
async function readPrices(path: string): Promise<PriceTable> {
  const table = await readConfig(path, "--prices");
  const prices: Record<string, ModelPrice> = {};
  for (const [model, value] of Object.entries(table)) {
    const price = value as Record<string, unknown>;
    const field = (name: string, required: boolean) => {
      const n = price?.[name];
      if (n === undefined && !required) return undefined;
      if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
        throw new UsageError(
          `--prices: "${model}".${name} must be US dollars per million tokens (a number ≥ 0)`,
        );
      }
      return n;
    };
    const cacheRead = field("cacheReadPerMillion", false);
    const cacheWrite = field("cacheWritePerMillion", false);
    prices[model] = {
      inputPerMillion: field("inputPerMillion", true)!,
      outputPerMillion: field("outputPerMillion", true)!,
      ...(cacheRead === undefined ? {} : { cacheReadPerMillion: cacheRead }),
      ...(cacheWrite === undefined ? {} : { cacheWritePerMillion: cacheWrite }),
    };
  }
  return prices;
}

export function integer(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}; got "${value}"`);
  }
  return n;
}

async function readConfig(path: string, flag: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    const config: unknown = JSON.parse(text);
    if (typeof config !== "object" || config === null || Array.isArray(config)) {
      throw new Error("not a JSON object");
    }
    return config as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`${flag}: ${path} is not a JSON object: ${(error as Error).message}`);
  }
}
