import { homedir, tmpdir } from "node:os";
import {
  type RunOptions as CoreRunOptions,
  type Executor,
  FileRunStore,
  type Manager,
  type ReviewPlan,
  type RunEvent,
  type RunStore,
  type Sandbox,
  type TaskRun,
} from "@taskledger/core";
import { daemonSocketPath } from "@taskledger/daemon";
import { createEvaluator } from "@taskledger/evaluator";
import { agentEnvironment, type OpencodeConfig } from "@taskledger/executor";
import { cacheDirectory, gitWorkspaces } from "@taskledger/git-workspace";
import { createModel, createPricing, type ModelWarning } from "@taskledger/llm";
import { createSandbox } from "@taskledger/sandbox";
import { createTelemetry, type Telemetry } from "@taskledger/telemetry";
import type { RunOptions } from "../options/cli-options.js";
import { maxRequestChars } from "../options/request-source.js";
import { agentHosts } from "../options/sandbox-options.js";
import { createAgentExecutor } from "./agent-executor.js";
import { createManager } from "./create-manager.js";
import { daemonLink, sandboxSpecs, usesDaemon } from "./daemon-link.js";
import { loadedQueue } from "./queue-module.js";

/** Everything one command needs, built from its options. */
export interface Runtime {
  manager: Manager;
  /** The run store when `--store` was given. */
  store: RunStore | undefined;
  /** `manager.start`, traced with `--otlp`. */
  start(request: string, options: CoreRunOptions): Promise<TaskRun>;
  /** `manager.resume`, traced with `--otlp` (linked to the sessions in `history`). */
  resume(
    runId: string,
    options: CoreRunOptions & { history: readonly RunEvent[] },
  ): Promise<TaskRun>;
  /** Flushes the spans, when traced. */
  /** Resolves when what the run needs is reachable (Redis with `--redis`); a typed error if not. */
  ready(abortSignal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The provider id opencode knows an `openai-compatible` server by. */
export const compatibleProviderId = "taskledger-compatible";

export function createRuntime(
  options: RunOptions,
  env: Readonly<Record<string, string | undefined>>,
  reviewPlan?: ReviewPlan,
  onModelWarning?: (warning: ModelWarning) => void,
  /** Where a line about a failed span export goes (stderr). */
  warn: (message: string) => void = () => {},
): Runtime {
  const pricing = createPricing(options.prices ? { prices: options.prices } : {});
  // The global provider is read at the first span, after `tracing` below registers it.
  const telemetry: Telemetry | undefined = options.otlp
    ? createTelemetry({
        captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === "true",
      })
    : undefined;
  const baseModel = createModel({
    provider: options.provider,
    model: options.model,
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    env,
    pricing,
    ...(onModelWarning ? { onWarning: onModelWarning } : {}),
  });
  const model = telemetry ? telemetry.model(baseModel) : baseModel;
  // A job names its agent in the model, so a worker runs it on the agent the run chose.
  const jobModel =
    options.agent === "opencode" ? options.agentModel : `${options.agent}:${options.agentModel}`;
  const queue = options.queue
    ? loadedQueue().createQueueExecutor({
        ...options.queue,
        agentModel: jobModel,
        ...(options.environment.setup ? { setup: options.environment.setup } : {}),
      })
    : undefined;
  // Attempts on opencode servers run in the per-user daemon, whose servers outlive the run.
  const daemon =
    !queue && options.executor === "server" && usesDaemon(options, env)
      ? daemonLink(env, warn)
      : undefined;
  const executor: Executor =
    queue ??
    createAgentExecutor({
      agent: options.agent,
      agentModel: options.agentModel,
      opencodeConfig: agentConfig(options),
      executor: options.executor,
      concurrency: options.concurrency,
      pricing,
      env,
      ...(options.agentEndpoint ? { agentEndpoint: options.agentEndpoint } : {}),
      ...(options.passEnv ? { passEnv: options.passEnv } : {}),
      ...(options.agentBaseUrl ? { agentBaseUrl: options.agentBaseUrl } : {}),
      prices: options.prices,
      ...(daemon ? { daemon } : {}),
    });
  const store = options.store ? new FileRunStore(options.store) : undefined;
  // Checks run what the agents wrote: the agents' list of the host's environment, the user's HOME.
  const commandEnv = agentEnvironment({
    provider: [],
    ...(options.passEnv ? { passEnv: options.passEnv } : {}),
    home: homedir(),
    tmp: tmpdir(),
  });
  const evaluator = createEvaluator({ model, commandEnv });
  const sandbox = runSandbox(options, env, warn);
  const manager = createManager({
    model,
    evaluator: telemetry ? telemetry.evaluator(evaluator) : evaluator,
    executor,
    concurrency: options.concurrency,
    maxRetries: options.maxRetries,
    maxSubTasks: options.maxSubTasks,
    maxRequestChars,
    alternateAgentModels: options.alternateAgentModels,
    replan: { enabled: options.replan },
    ...(options.projectChecks ? {} : { projectChecks: false }),
    ...(options.explore ? { explore: true } : {}),
    ...(options.bestOf ? { bestOf: options.bestOf } : {}),
    integration: options.integration,
    acceptance: options.acceptance,
    ...(options.maxCostUsd === undefined ? {} : { budget: { maxCostUsd: options.maxCostUsd } }),
    ...(reviewPlan ? { reviewPlan } : {}),
    cwd: options.cwd,
    isolation: options.isolation,
    workspaces: gitWorkspaces(options.environment),
    ...(options.checks ? { checks: options.checks } : {}),
    apply: options.apply,
    ...(store ? { store } : {}),
    sandbox,
  });
  // A run's own opencode agents are the daemon's: it starts with the run, not at its first warm-up.
  const startDaemon = (signal: AbortSignal | undefined) => {
    if (options.agent === "opencode") daemon?.start(signal);
  };
  const otlp = options.otlp;
  let tracing: Promise<() => Promise<void>> | undefined;
  const traced = async (): Promise<Telemetry | undefined> => {
    if (!telemetry || !otlp) return undefined;
    tracing ??= import("./otlp-tracing.js").then((m) => m.startOtlpTracing(otlp, warn));
    await tracing;
    return telemetry;
  };
  return {
    manager,
    store,
    async start(request, runOptions) {
      startDaemon(runOptions.abortSignal);
      const t = await traced();
      return t ? t.start(manager, request, runOptions) : manager.start(request, runOptions);
    },
    async resume(runId, { history, ...runOptions }) {
      startDaemon(runOptions.abortSignal);
      const t = await traced();
      return t
        ? t.resume(manager, runId, { ...runOptions, history })
        : manager.resume(runId, runOptions);
    },
    ready: async (abortSignal) => queue?.ready(abortSignal),
    async close() {
      await executor.close?.();
      daemon?.close();
      await sandbox.close();
      const stop = await tracing;
      await stop?.();
    },
  };
}

/**
 * The run's OS sandbox: the agents' model endpoints and the project's hosts allowed; the run store
 * and the kept slots (another attempt's room) unreadable; one line when `auto` cannot confine.
 */
export function runSandbox(
  options: RunOptions,
  env: Readonly<Record<string, string | undefined>>,
  warn: (message: string) => void,
): Sandbox {
  let told = false;
  const spec = {
    mode: options.sandbox.mode,
    allowHosts: [
      ...agentHosts({ ...options, opencodeConfig: agentConfig(options) }, env),
      ...options.sandbox.allowHosts,
    ],
    // The cache holds the other slots and the daemon's socket (or names where it is).
    denyRead: [
      ...(options.store ? [options.store] : []),
      cacheDirectory(),
      daemonSocketPath(cacheDirectory()),
    ],
    ...(env.HOME ? { home: env.HOME } : {}),
    ...(options.sandbox.homeReads ? { homeReads: options.sandbox.homeReads } : {}),
    // Sessions in running opencode servers: each server is reached through a bridge.
    serves: !options.queue && options.executor === "server",
  };
  const sandbox = createSandbox({
    ...spec,
    onUnconfined: (line) => {
      if (!told) warn(line);
      told = true;
    },
  });
  sandboxSpecs.set(sandbox, spec);
  return sandbox;
}

/**
 * The host's opencode config, plus a provider entry when the agent talks to an OpenAI-compatible
 * server, naming every model of it the run may use (the agent's, alternates', candidates').
 */
export function agentConfig(
  options: Pick<RunOptions, "opencodeConfig" | "agentModel" | "provider" | "baseURL"> &
    Partial<Pick<RunOptions, "alternateAgentModels" | "bestOf">>,
): OpencodeConfig {
  const config: OpencodeConfig = { ...(options.opencodeConfig ?? {}) };
  const prefix = `${compatibleProviderId}/`;
  const modelIds = [
    options.agentModel,
    ...(options.alternateAgentModels ?? []),
    ...(options.bestOf?.models ?? []),
  ]
    .map((model) => model.replace(/^opencode:/, ""))
    .filter((model) => model.startsWith(prefix))
    .map((model) => model.slice(prefix.length));
  if (options.provider === "openai-compatible" && modelIds.length > 0 && options.baseURL) {
    const providers = (config.provider ?? {}) as Record<string, unknown>;
    config.provider = {
      ...providers,
      [compatibleProviderId]: {
        npm: "@ai-sdk/openai-compatible",
        name: "OpenAI-compatible (taskledger)",
        options: { baseURL: options.baseURL },
        models: Object.fromEntries(modelIds.map((id) => [id, { name: id }])),
      },
    };
  }
  return config;
}
