import {
  type AttemptProcess,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  InvalidConfigError,
} from "@taskledger/core";

/** The coding agents taskledger runs attempts with. */
export type AgentName = "opencode" | "claude-code" | "codex";
export const agentNames: readonly AgentName[] = ["opencode", "claude-code", "codex"];

/**
 * Reads an agent model that may name its agent: `claude-code:sonnet`, `codex:gpt-5-codex`,
 * `opencode:anthropic/claude-sonnet-4-5`, or a bare model for the run's own agent.
 */
export function parseAgentModel(value: string): { agent?: AgentName; model: string } {
  const colon = value.indexOf(":");
  const prefix = colon > 0 ? value.slice(0, colon) : "";
  if (!agentNames.includes(prefix as AgentName)) return { model: value };
  const model = value.slice(colon + 1);
  if (!model) throw new InvalidConfigError(`"${value}" names an agent but no model`);
  return { agent: prefix as AgentName, model };
}

/**
 * An executor that runs each attempt on the agent its model names (escalation may change agent,
 * not only model): the run's own agent by default, another made on first use by `make`.
 */
export class AgentSwitchExecutor implements Executor {
  private readonly executors = new Map<AgentName, Executor>();

  constructor(
    private readonly agent: AgentName,
    private readonly make: (agent: AgentName, model: string) => Executor,
    private readonly model: string,
  ) {
    this.executors.set(agent, make(agent, model));
  }

  /** Each agent the run may use checks its binary and its own models, before a plan is paid for. */
  async preflight(input: {
    agentModels: readonly string[];
    abortSignal: AbortSignal;
  }): Promise<void> {
    const models = new Map<AgentName, string[]>([[this.agent, []]]);
    for (const value of input.agentModels) {
      const { agent = this.agent, model } = parseAgentModel(value);
      models.set(agent, [...(models.get(agent) ?? []), model]);
    }
    for (const [agent, agentModels] of models) {
      const executor = this.executorFor(agent, agentModels[0] ?? this.model);
      await executor.preflight?.({ agentModels, abortSignal: input.abortSignal });
    }
  }

  /** The run's own agent warms up; another is made only when an escalation asks for it. */
  warm(input: Parameters<NonNullable<Executor["warm"]>>[0]): void {
    this.executors.get(this.agent)?.warm?.(input);
  }

  run(prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
    const asked =
      options.agentModel === undefined ? undefined : parseAgentModel(options.agentModel);
    const executor = this.executorFor(asked?.agent ?? this.agent, asked?.model ?? this.model);
    const { agentModel: _given, ...rest } = options;
    return executor.run(prompt, asked ? { ...rest, agentModel: asked.model } : rest);
  }

  private executorFor(agent: AgentName, model: string): Executor {
    let executor = this.executors.get(agent);
    if (!executor) {
      executor = this.make(agent, model);
      this.executors.set(agent, executor);
    }
    return executor;
  }

  guard(process: AttemptProcess): () => void {
    const own = this.executors.get(this.agent);
    return own?.guard?.(process) ?? (() => {});
  }

  async reclaim(processes: readonly AttemptProcess[]): Promise<void> {
    for (const executor of this.executors.values()) await executor.reclaim?.(processes);
  }

  async close(): Promise<void> {
    for (const executor of this.executors.values()) await executor.close?.();
  }
}
