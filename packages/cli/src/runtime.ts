import { FileRunStore, type Manager, type ReviewPlan, type RunStore } from "@taskledger/core";
import { createOpencodeExecutor, type OpencodeConfig } from "@taskledger/executor";
import { createModel, type ModelWarning } from "@taskledger/llm";
import { createQueueExecutor } from "@taskledger/queue";
import type { RunOptions } from "./cli-options.js";
import { createManager } from "./create-manager.js";
import { maxRequestChars } from "./request-source.js";

/** Everything one command needs, built from its options. */
export interface Runtime {
  manager: Manager;
  /** The run store when `--store` was given. */
  store: RunStore | undefined;
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
): Runtime {
  const model = createModel({
    provider: options.provider,
    model: options.model,
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    env,
    ...(onModelWarning ? { onWarning: onModelWarning } : {}),
  });
  const queue = options.queue
    ? createQueueExecutor({ ...options.queue, agentModel: options.agentModel })
    : undefined;
  const executor =
    queue ??
    createOpencodeExecutor({
      model: options.agentModel,
      config: agentConfig(options),
    });
  const store = options.store ? new FileRunStore(options.store) : undefined;
  const manager = createManager({
    model,
    executor,
    concurrency: options.concurrency,
    maxRetries: options.maxRetries,
    maxSubTasks: options.maxSubTasks,
    maxRequestChars,
    alternateAgentModels: options.alternateAgentModels,
    replan: { enabled: options.replan },
    ...(reviewPlan ? { reviewPlan } : {}),
    cwd: options.cwd,
    isolation: options.isolation,
    apply: options.apply,
    ...(store ? { store } : {}),
  });
  return {
    manager,
    store,
    ready: async (abortSignal) => queue?.ready(abortSignal),
    close: async () => queue?.close(),
  };
}

/** The host's opencode config, plus a provider entry when the agent talks to an OpenAI-compatible server. */
export function agentConfig(
  options: Pick<RunOptions, "opencodeConfig" | "agentModel" | "provider" | "baseURL">,
): OpencodeConfig {
  const config: OpencodeConfig = { ...(options.opencodeConfig ?? {}) };
  const [providerId, ...rest] = options.agentModel.split("/");
  if (
    options.provider === "openai-compatible" &&
    providerId === compatibleProviderId &&
    options.baseURL
  ) {
    const modelId = rest.join("/");
    const providers = (config.provider ?? {}) as Record<string, unknown>;
    config.provider = {
      ...providers,
      [compatibleProviderId]: {
        npm: "@ai-sdk/openai-compatible",
        name: "OpenAI-compatible (taskledger)",
        options: { baseURL: options.baseURL },
        models: { [modelId]: { name: modelId } },
      },
    };
  }
  return config;
}
