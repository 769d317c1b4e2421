import { type SandboxMode, sandboxModes } from "@taskledger/core";
import { parseHomeRead, parseHost } from "@taskledger/sandbox";
import { UsageError } from "./usage-error.js";

/** The command line's sandbox flags (a part of the run's raw options). */
export interface SandboxFlags {
  sandbox?: string;
  /** `--allow-host`, repeatable. */
  allowHost?: string[];
  /** No flag: a resumed run's logged `homeReads` (the config file is not read again). */
  homeRead?: string[];
}

/** The config file's `sandbox`: a mode, or the mode, the hosts and the home reads it allows. */
export type SandboxDefaults =
  | SandboxMode
  | { mode?: SandboxMode; network?: { allow?: string[] }; homeReads?: string[] };

/** What the run's sandbox is made of: its mode, the hosts and the home paths the user allows. */
export interface SandboxChoice {
  mode: SandboxMode;
  /** The project's and the command line's hosts (the agents' model endpoints are added to them). */
  allowHosts: string[];
  /** What launches read in the user's home besides the defaults (`~/…`); absent when none. */
  homeReads?: string[];
}

/** The sandbox as the command line (over the config file) asks: `auto` unless told. */
export function sandboxOf(raw: SandboxFlags, project: SandboxDefaults | undefined): SandboxChoice {
  const config = typeof project === "string" ? { mode: project } : project;
  const mode = (raw.sandbox ?? config?.mode ?? "auto") as SandboxMode;
  if (!sandboxModes.includes(mode)) {
    throw new UsageError(`--sandbox must be one of ${sandboxModes.join(", ")}; got "${mode}"`);
  }
  const allowHosts = [...(config?.network?.allow ?? []), ...(raw.allowHost ?? [])];
  for (const host of allowHosts) {
    try {
      parseHost(host);
    } catch (error) {
      throw new UsageError(`--allow-host: ${(error as Error).message}`);
    }
  }
  const homeReads = [...(config?.homeReads ?? []), ...(raw.homeRead ?? [])].map((entry) => {
    try {
      return parseHomeRead(entry);
    } catch (error) {
      throw new UsageError(`"sandbox.homeReads": ${(error as Error).message}`);
    }
  });
  return {
    mode,
    allowHosts: [...new Set(allowHosts)],
    ...(homeReads.length > 0 ? { homeReads: [...new Set(homeReads)] } : {}),
  };
}

// Where each provider's API answers; opencode, Claude Code and Codex call these for their model.
const providerHosts: Record<string, string[]> = {
  anthropic: ["api.anthropic.com"],
  openai: ["api.openai.com"],
  google: ["generativelanguage.googleapis.com"],
  xai: ["api.x.ai"],
  openrouter: ["openrouter.ai"],
  groq: ["api.groq.com"],
  mistral: ["api.mistral.ai"],
  deepseek: ["api.deepseek.com"],
  together: ["api.together.xyz"],
  fireworks: ["api.fireworks.ai"],
  "amazon-bedrock": ["*.amazonaws.com"],
  azure: ["*.openai.azure.com"],
};

/**
 * The model endpoints the run's agents call: every agent model's provider, the base URLs of the
 * opencode config's providers, the agent endpoint, and the vendors of Claude Code and Codex (with
 * their sign-in hosts when they log in with the user's account).
 */
export function agentHosts(
  options: {
    agent: string;
    agentModel: string;
    alternateAgentModels: readonly string[];
    bestOf?: { models: readonly string[] } | undefined;
    agentEndpoint?: { anthropicBaseURL: string; openaiBaseURL: string } | undefined;
    baseURL: string | undefined;
    /** `--agent-base-url`: where every agent of the run sends its model calls. */
    agentBaseUrl?: string | undefined;
    opencodeConfig: Record<string, unknown> | undefined;
  },
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const hosts = new Set<string>();
  const models = [
    options.agentModel,
    ...options.alternateAgentModels,
    ...(options.bestOf?.models ?? []),
  ];
  const agents = new Set<string>([options.agent]);
  for (const model of models) {
    const named = /^(opencode|claude-code|codex):(.*)$/.exec(model);
    const agent = named?.[1] ?? options.agent;
    agents.add(agent);
    const rest = named?.[2] ?? model;
    if (agent === "opencode") {
      for (const host of providerHosts[rest.split("/")[0] ?? ""] ?? []) hosts.add(host);
    }
  }
  if (agents.has("opencode") && options.baseURL) hosts.add(options.baseURL);
  const providers = options.opencodeConfig?.provider;
  if (typeof providers === "object" && providers !== null) {
    for (const provider of Object.values(providers as Record<string, unknown>)) {
      const url = (provider as { options?: { baseURL?: unknown } })?.options?.baseURL;
      if (typeof url === "string") hosts.add(url);
    }
  }
  // `--agent-base-url`: where every agent of the run sends its model calls.
  if (options.agentBaseUrl) hosts.add(options.agentBaseUrl);
  if (options.agentEndpoint) {
    hosts.add(options.agentEndpoint.anthropicBaseURL);
    hosts.add(options.agentEndpoint.openaiBaseURL);
  }
  if (agents.has("claude-code")) hosts.add(env.ANTHROPIC_BASE_URL || "api.anthropic.com");
  if (agents.has("codex")) {
    hosts.add("api.openai.com");
    // A ChatGPT login's model calls and its token refresh.
    hosts.add("chatgpt.com");
    hosts.add("auth.openai.com");
  }
  return [...hosts].filter((host) => {
    try {
      parseHost(host);
      return true;
    } catch {
      return false;
    }
  });
}
