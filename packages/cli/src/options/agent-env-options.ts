import { environmentNamePattern } from "@taskledger/executor";
import { UsageError } from "./usage-error.js";

/** The command line's agent environment flags (a part of the run's raw options). */
export interface AgentEnvFlags {
  /** `--pass-env NAME`, repeatable. */
  passEnv?: string[];
  /** `--agent-base-url URL`. */
  agentBaseUrl?: string;
}

/** The config file's agent environment keys, and what a run's options hold of them. */
export interface AgentEnvDefaults {
  /** Host variables every agent gets besides its own list (`--pass-env`, `passEnv`). */
  passEnv?: string[];
  /** Where the agent sends its model calls (`--agent-base-url`, `agentBaseUrl`). */
  agentBaseUrl?: string;
}

/**
 * The host variables every agent gets besides its own list (the config file's, then the command
 * line's) and the agent's endpoint (the command line's over the config file's).
 */
export function agentEnvOf(
  raw: AgentEnvFlags,
  project: AgentEnvDefaults | undefined,
): { passEnv: string[]; agentBaseUrl?: string } {
  const passEnv = [...(project?.passEnv ?? []), ...(raw.passEnv ?? [])];
  for (const name of passEnv) {
    if (!environmentNamePattern.test(name)) {
      throw new UsageError(`--pass-env must name an environment variable; got "${name}"`);
    }
  }
  const agentBaseUrl = raw.agentBaseUrl ?? project?.agentBaseUrl;
  if (agentBaseUrl !== undefined) {
    const url = URL.canParse(agentBaseUrl) ? new URL(agentBaseUrl) : undefined;
    if (url?.protocol !== "http:" && url?.protocol !== "https:") {
      throw new UsageError(`--agent-base-url must be an http(s) URL; got "${agentBaseUrl}"`);
    }
  }
  return { passEnv: [...new Set(passEnv)], ...(agentBaseUrl ? { agentBaseUrl } : {}) };
}
