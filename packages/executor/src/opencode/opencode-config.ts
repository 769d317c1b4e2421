import { isObject } from "../events/json-fields.js";

/** An opencode config object (opencode.json), as loose JSON. */
export type OpencodeConfig = Record<string, unknown>;

/**
 * Default permissions: the agent edits files and runs commands, nothing reaches outside the
 * sub-task's directory or the web, and nothing is left to ask a person (`opencode run` would
 * reject it and end the run).
 */
export const defaultPermission: Record<string, string> = {
  read: "allow",
  edit: "allow",
  bash: "allow",
  glob: "allow",
  grep: "allow",
  list: "allow",
  todowrite: "allow",
  todoread: "allow",
  task: "allow",
  skill: "allow",
  webfetch: "deny",
  websearch: "deny",
  codesearch: "deny",
  external_directory: "deny",
  doom_loop: "deny",
  question: "deny",
};

/** The agent a read-only attempt runs as: it reads and searches, never edits or runs a command. */
export const readOnlyAgent = "taskledger-explore";

/** The read-only agent's permissions: the defaults with every way to change something denied. */
export const readOnlyPermission: Record<string, string> = {
  ...defaultPermission,
  edit: "deny",
  bash: "deny",
  task: "deny",
  skill: "deny",
};

export interface RunConfigInput {
  /** `provider/model`. */
  model: string;
  agent: string;
  hostConfig: OpencodeConfig | undefined;
  permission: Record<string, unknown> | undefined;
  timeoutMs: number;
  maxSteps: number;
  /** The agent's endpoint: the `baseURL` of this provider's options. */
  baseUrl?: { provider: string; url: string } | undefined;
}

/**
 * The config one attempt runs with: run defaults, then the host's config, then what the run
 * cannot do without (no autoupdate, no sharing, a step cap).
 */
export function buildRunConfig(input: RunConfigInput): OpencodeConfig {
  const providerId = input.model.split("/")[0] ?? "";
  // opencode's provider timeouts default to 5 minutes per chunk; set just past the attempt's own
  // limit, so the attempt's watchdog is what ends a stalled call, once, without opencode retrying.
  const providerTimeoutMs = input.timeoutMs + 5000;
  const timeouts = {
    timeout: providerTimeoutMs,
    chunkTimeout: providerTimeoutMs,
    headerTimeout: providerTimeoutMs,
  };
  const defaults: OpencodeConfig = {
    // opencode's own undo history: a git capture of the tree before and after every step (seconds
    // on a large repository). taskledger keeps each attempt's work as a commit instead.
    snapshot: false,
    permission: defaultPermission,
    provider: { [providerId]: { options: timeouts } },
  };
  const forced: OpencodeConfig = {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    agent: {
      [input.agent]: { steps: input.maxSteps },
      [readOnlyAgent]: {
        mode: "primary",
        description: "taskledger: looks things up in the project without changing it",
        steps: input.maxSteps,
        permission: readOnlyPermission,
      },
    },
    ...(input.permission ? { permission: input.permission } : {}),
    ...(input.baseUrl
      ? { provider: { [input.baseUrl.provider]: { options: { baseURL: input.baseUrl.url } } } }
      : {}),
  };
  return deepMerge(deepMerge(defaults, input.hostConfig ?? {}), forced);
}

/** Plain objects merge key by key; anything else (arrays included) replaces. */
export function deepMerge(base: OpencodeConfig, over: OpencodeConfig): OpencodeConfig {
  const merged: OpencodeConfig = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = merged[key];
    merged[key] = isObject(current) && isObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}
