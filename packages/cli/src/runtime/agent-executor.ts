import type { Executor, Pricing } from "@taskledger/core";
import { DaemonExecutor, type DaemonLink } from "@taskledger/daemon";
import {
  type AgentName,
  AgentSwitchExecutor,
  createClaudeCodeExecutor,
  createCodexExecutor,
  createOpencodeExecutor,
  createOpencodeServerExecutor,
  type OpencodeConfig,
} from "@taskledger/executor";
import type { PriceTable } from "@taskledger/llm";
import type { ExecutorKind, RunOptions } from "../options/cli-options.js";

/** What the CLI knows when it makes the executors of a run or a worker. */
export interface AgentExecutorInput {
  agent: AgentName;
  agentModel: string;
  opencodeConfig: OpencodeConfig;
  executor: ExecutorKind;
  concurrency: number;
  pricing?: Pricing;
  env: NodeJS.ProcessEnv;
  agentEndpoint?: RunOptions["agentEndpoint"];
  /** Host variables every agent gets besides its own list. */
  passEnv?: readonly string[];
  /** Where the agent sends its model calls. */
  agentBaseUrl?: string | undefined;
  /** The run's own prices (`--prices`), for a daemon to price its attempts as `pricing` would. */
  prices?: PriceTable | undefined;
  /** The per-user daemon the opencode servers run in, kept warm between runs. */
  daemon?: DaemonLink;
}

/**
 * The run's executor: attempts on its agent, and on another one when an alternate agent model
 * names it (`codex:gpt-5-codex`). Claude Code and Codex log in with the user's own login unless
 * an API key is in the environment.
 */
export function createAgentExecutor(input: AgentExecutorInput): Executor {
  const pricing = {
    ...(input.pricing ? { pricing: input.pricing } : {}),
    ...(input.passEnv?.length ? { passEnv: input.passEnv } : {}),
    ...(input.agentBaseUrl ? { baseUrl: input.agentBaseUrl } : {}),
  };
  const make = (agent: AgentName, model: string): Executor => {
    const endpoint = input.agentEndpoint;
    if (agent === "claude-code") {
      if (endpoint) {
        const env = {
          ANTHROPIC_BASE_URL: endpoint.anthropicBaseURL,
          ANTHROPIC_API_KEY: endpoint.key,
        };
        return createClaudeCodeExecutor({ model, env, ...pricing });
      }
      const auth =
        input.env.ANTHROPIC_API_KEY || input.env.ANTHROPIC_AUTH_TOKEN ? "api-key" : "login";
      return createClaudeCodeExecutor({ model, auth, ...pricing });
    }
    if (agent === "codex") {
      if (endpoint) {
        const provider = { baseUrl: endpoint.openaiBaseURL, envKey: "TASKLEDGER_AGENT_KEY" };
        const env = { TASKLEDGER_AGENT_KEY: endpoint.key };
        return createCodexExecutor({ model, provider, env, ...pricing });
      }
      const auth = input.env.OPENAI_API_KEY || input.env.CODEX_API_KEY ? "api-key" : "login";
      return createCodexExecutor({ model, auth, ...pricing });
    }
    const settings = { model, config: input.opencodeConfig, ...pricing };
    if (input.executor !== "server") return createOpencodeExecutor(settings);
    // One server per sub-task that can run at once: no attempt waits for a server.
    if (input.daemon === undefined) {
      return createOpencodeServerExecutor({ ...settings, poolSize: input.concurrency });
    }
    const { pricing: priced, ...plain } = settings;
    return new DaemonExecutor(
      {
        options: { ...plain, poolSize: input.concurrency, hostEnv: { ...input.env } },
        ...(input.prices ? { prices: input.prices } : {}),
      },
      input.daemon,
      priced,
    );
  };
  return new AgentSwitchExecutor(input.agent, make, input.agentModel);
}
