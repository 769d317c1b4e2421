import { type PriceTable, type SandboxMode, sandboxModes } from "@taskledger/core";
import { type AgentName, agentNames } from "@taskledger/executor";
import {
  type ExecutorKind,
  executorKinds,
  type RawRunOptions,
  type RunOptions,
} from "./cli-options.js";
import type { SandboxChoice } from "./sandbox-options.js";

/** What the CLI logs with a run so `resume --store DIR` needs nothing else. Never a secret. */
export interface HostSettings {
  provider: string;
  model: string;
  baseURL?: string;
  /** Absent in logs of runs from before `--agent`: those ran on opencode. */
  agent?: AgentName;
  agentModel: string;
  opencodeConfig?: Record<string, unknown>;
  /** Absent in logs of runs from before `--executor`: those ran on the CLI executor. */
  executor?: ExecutorKind;
  /** `--prices`, so a resumed run prices its calls the same way. */
  prices?: PriceTable;
  /** The project config file the run's options came from (shown, not read again on resume). */
  config?: string;
  /** `--no-keep-slots`: a resumed run makes its worktrees anew too. */
  keepSlots?: false;
  /** `--pass-env` and `passEnv`: names only, never a value. */
  passEnv?: string[];
  agentBaseUrl?: string;
  /** The sandbox the run chose, so a resumed run is confined the same way. */
  sandbox?: SandboxChoice;
}

// Keys whose values are credentials; `{env:NAME}` and `{file:PATH}` references are kept.
const secretKey = /(api[-_]?key|token|secret|password|passwd|authorization|credential|cookie)/i;
const reference = /^\{(env|file):[^}]+\}$/;

export function hostSettingsOf(options: RunOptions): HostSettings {
  return {
    provider: options.provider,
    model: options.model,
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    agent: options.agent,
    agentModel: options.agentModel,
    ...(options.opencodeConfig
      ? { opencodeConfig: withoutSecrets(options.opencodeConfig) as Record<string, unknown> }
      : {}),
    executor: options.executor,
    ...(options.prices ? { prices: options.prices } : {}),
    ...(options.configPath ? { config: options.configPath } : {}),
    ...(options.environment.slots === false ? { keepSlots: false as const } : {}),
    ...(options.passEnv?.length ? { passEnv: options.passEnv } : {}),
    ...(options.agentBaseUrl ? { agentBaseUrl: options.agentBaseUrl } : {}),
    sandbox: options.sandbox,
  };
}

/** A copy of `value` without credential-looking fields, so a logged config never holds a key. */
export function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (typeof value !== "object" || value === null) return value;
  const kept: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (secretKey.test(key) && !(typeof inner === "string" && reference.test(inner))) continue;
    kept[key] = withoutSecrets(inner);
  }
  return kept;
}

/** Reads the host settings a run logged; anything unexpected counts as absent. */
export function readHostSettings(
  host: Record<string, unknown> | undefined,
): HostSettings | undefined {
  if (!host || typeof host.provider !== "string" || typeof host.model !== "string")
    return undefined;
  if (typeof host.agentModel !== "string") return undefined;
  const config = host.opencodeConfig;
  return {
    provider: host.provider,
    model: host.model,
    ...(typeof host.baseURL === "string" ? { baseURL: host.baseURL } : {}),
    ...(agentNames.includes(host.agent as AgentName) ? { agent: host.agent as AgentName } : {}),
    agentModel: host.agentModel,
    ...(typeof config === "object" && config !== null && !Array.isArray(config)
      ? { opencodeConfig: config as Record<string, unknown> }
      : {}),
    ...(executorKinds.includes(host.executor as ExecutorKind)
      ? { executor: host.executor as ExecutorKind }
      : {}),
    ...(typeof host.prices === "object" && host.prices !== null && !Array.isArray(host.prices)
      ? { prices: host.prices as PriceTable }
      : {}),
    ...(host.keepSlots === false ? { keepSlots: false as const } : {}),
    ...(Array.isArray(host.passEnv) && host.passEnv.every((name) => typeof name === "string")
      ? { passEnv: host.passEnv as string[] }
      : {}),
    ...(typeof host.agentBaseUrl === "string" ? { agentBaseUrl: host.agentBaseUrl } : {}),
    ...sandboxOfLog(host.sandbox),
  };
}

function sandboxOfLog(value: unknown): { sandbox?: SandboxChoice } {
  const logged = value as Partial<SandboxChoice> | undefined;
  if (!logged || !sandboxModes.includes(logged.mode as SandboxMode)) return {};
  const hosts = Array.isArray(logged.allowHosts) ? logged.allowHosts : [];
  const reads = Array.isArray(logged.homeReads) ? logged.homeReads : [];
  const homeReads = reads.filter((path): path is string => typeof path === "string");
  return {
    sandbox: {
      mode: logged.mode as SandboxMode,
      allowHosts: hosts.filter((host): host is string => typeof host === "string"),
      ...(homeReads.length > 0 ? { homeReads } : {}),
    },
  };
}

/** The options of `run` that a resumed run takes from its log unless given again. */
export const loggedOptions = [
  ["provider", "--provider"],
  ["model", "--model"],
  ["baseUrl", "--base-url"],
  ["agent", "--agent"],
  ["agentModel", "--agent-model"],
  ["opencodeConfig", "--opencode-config"],
  ["cwd", "--cwd"],
  ["concurrency", "--concurrency"],
  ["maxRetries", "--max-retries"],
  ["maxSubTasks", "--max-sub-tasks"],
  ["alternateAgentModel", "--alternate-agent-model"],
  ["replan", "--no-replan"],
  ["bestOf", "--best-of"],
  ["bestOfAll", "--best-of-all"],
  ["bestOfLadder", "--no-best-of-ladder"],
  ["candidateModel", "--candidate-model"],
  ["projectChecks", "--no-project-checks"],
  ["integration", "--integration"],
  ["acceptance", "--no-acceptance"],
  ["acceptanceRounds", "--acceptance-rounds"],
  ["executor", "--executor"],
  ["maxCost", "--max-cost"],
  ["prices", "--prices"],
  ["passEnv", "--pass-env"],
  ["agentBaseUrl", "--agent-base-url"],
  ["sandbox", "--sandbox"],
  ["allowHost", "--allow-host"],
  ["homeRead", "taskledger.json's sandbox.homeReads"],
] as const satisfies readonly (readonly [keyof RawRunOptions, string])[];
