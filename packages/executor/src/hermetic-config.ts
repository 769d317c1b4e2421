import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { agentEnvironment } from "./agent-environment.js";
import { opencodeKeyVariables } from "./opencode-provider-keys.js";

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
    merged[key] =
      isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}

export interface AttemptDirs {
  root: string;
  config: string;
  data: string;
  state: string;
  cache: string;
  /** opencode's HOME: nothing of the user's home is read through it. */
  home: string;
  /** opencode's TMPDIR: it unpacks a native library there on every start and never deletes it. */
  tmp: string;
}

/**
 * Creates an attempt's own XDG directories. opencode 1.18 npm-installs `@opencode-ai/plugin` into
 * every config directory it loads unless that directory already has `node_modules` and a lockfile
 * naming it; seeding both keeps the run off the network.
 */
export async function createAttemptDirs(
  root: string,
  opencodeVersion: string,
): Promise<AttemptDirs> {
  const dirs: AttemptDirs = {
    root,
    config: join(root, "config"),
    data: join(root, "data"),
    state: join(root, "state"),
    cache: join(root, "cache"),
    home: join(root, "home"),
    tmp: join(root, "tmp"),
  };
  const opencodeConfigDir = join(dirs.config, "opencode");
  await Promise.all([
    mkdir(join(opencodeConfigDir, "node_modules"), { recursive: true }),
    mkdir(dirs.data, { recursive: true }),
    mkdir(dirs.state, { recursive: true }),
    mkdir(dirs.cache, { recursive: true }),
    mkdir(dirs.home, { recursive: true }),
    mkdir(dirs.tmp, { recursive: true }),
  ]);
  const dependencies = { "@opencode-ai/plugin": opencodeVersion };
  await Promise.all([
    writeFile(join(opencodeConfigDir, "package.json"), JSON.stringify({ dependencies })),
    writeFile(
      join(opencodeConfigDir, "package-lock.json"),
      JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies } } }),
    ),
  ]);
  return dirs;
}

/** Environment for an attempt: `base` (the agent's list of the host's), and opencode's own. */
export function buildRunEnv(input: {
  dirs: AttemptDirs;
  config: OpencodeConfig;
  inheritGlobalConfig: boolean;
  projectConfig: boolean;
  base: Record<string, string>;
  extra: Record<string, string | undefined> | undefined;
}): Record<string, string> {
  const env: Record<string, string> = { ...input.base };
  Object.assign(env, {
    XDG_DATA_HOME: input.dirs.data,
    XDG_STATE_HOME: input.dirs.state,
    XDG_CACHE_HOME: input.dirs.cache,
    TMPDIR: input.dirs.tmp,
    TMP: input.dirs.tmp,
    TEMP: input.dirs.tmp,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(input.config),
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_TERMINAL_TITLE: "1",
  });
  if (!input.inheritGlobalConfig) {
    Object.assign(env, {
      XDG_CONFIG_HOME: input.dirs.config,
      OPENCODE_DISABLE_CLAUDE_CODE: "1",
      OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    });
  }
  if (!input.projectConfig) env.OPENCODE_DISABLE_PROJECT_CONFIG = "1";
  for (const [key, value] of Object.entries(input.extra ?? {})) {
    if (value !== undefined) env[key] = value;
  }
  return env;
}

function isPlainObject(value: unknown): value is OpencodeConfig {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The executor options that shape an attempt's opencode config and environment. */
export interface HermeticOptions {
  config?: OpencodeConfig;
  permission?: Record<string, unknown>;
  inheritGlobalConfig?: boolean;
  projectConfig?: boolean;
  inheritEnv?: boolean;
  env?: Record<string, string | undefined>;
  passEnv?: readonly string[];
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** The agent's endpoint: the `baseURL` of the executor's model's provider. */
  baseUrl?: string;
  /** The executor's own model. */
  model: string;
}

/**
 * An attempt's config and environment, the same for the CLI and the server executor. `models`: every
 * model the process may run, whose providers' key variables it gets (default: `model`).
 */
export function hermeticEnvironment(
  options: HermeticOptions,
  settings: { agent: string; timeoutMs: number; maxSteps: number },
  model: string,
  dirs: AttemptDirs,
  models: readonly string[] = [model],
): Record<string, string> {
  const config = buildRunConfig({
    model,
    agent: settings.agent,
    hostConfig: options.config,
    permission: options.permission,
    timeoutMs: settings.timeoutMs,
    maxSteps: settings.maxSteps,
    baseUrl:
      options.baseUrl === undefined
        ? undefined
        : { provider: options.model.split("/")[0] ?? "", url: options.baseUrl },
  });
  const global = options.inheritGlobalConfig ?? false;
  const base = {
    ...opencodeHostVariables(options, models),
    ...(global ? {} : { HOME: dirs.home, USERPROFILE: dirs.home }),
    TMPDIR: dirs.tmp,
    TMP: dirs.tmp,
    TEMP: dirs.tmp,
  };
  return buildRunEnv({
    dirs,
    config,
    inheritGlobalConfig: global,
    projectConfig: options.projectConfig ?? true,
    base,
    extra: options.env,
  });
}

/**
 * The host's variables an opencode process of these options inherits (before its private home
 * and temp directory): two option sets with equal variables may share a running server.
 */
export function opencodeHostVariables(
  options: HermeticOptions,
  models: readonly string[] = [options.model],
): Record<string, string> {
  const global = options.inheritGlobalConfig ?? false;
  const host = options.hostEnv ?? process.env;
  // The user's global opencode config is found through their own HOME and OPENCODE_* variables.
  const own = global
    ? Object.keys(host).filter((key) => key.startsWith("OPENCODE_") || key === "XDG_CONFIG_HOME")
    : [];
  const base = agentEnvironment({
    provider: [...opencodeKeyVariables([...models, options.model], options.config), ...own],
    ...(options.passEnv ? { passEnv: options.passEnv } : {}),
    ...(options.inheritEnv === undefined ? {} : { inheritEnv: options.inheritEnv }),
    ...(global ? {} : { drop: /^(OPENCODE_|XDG_)/ }),
    home: global ? host.HOME : undefined,
    host,
    tmp: "",
  });
  for (const name of ["TMPDIR", "TMP", "TEMP"]) delete base[name];
  return base;
}
