import { agentEnvironment } from "../agent/agent-environment.js";
import type { AttemptDirs } from "./attempt-dirs.js";
import { buildRunConfig, type OpencodeConfig } from "./opencode-config.js";
import { opencodeKeyVariables } from "./opencode-provider-keys.js";

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
