import { InvalidConfigError } from "@taskledger/core";

/** What an agent executor's options say about the environment its process gets. */
export interface AgentEnvironmentOptions {
  /** Extra environment for the agent (API keys, base URLs, …), set whatever the host has. */
  env?: Record<string, string | undefined>;
  /** Host variables passed to the agent besides its own list (`DATABASE_URL`, …), when set. */
  passEnv?: readonly string[];
  /**
   * @deprecated Pass the host's whole environment (minus the agent's own config variables), as
   * before the allowlist; `passEnv` names what the agent needs instead. Default false.
   */
  inheritEnv?: boolean;
  /**
   * The host environment the agent's variables are taken from; default `process.env`. A service
   * that runs attempts for other processes (the CLI's daemon) passes its caller's.
   */
  hostEnv?: Readonly<Record<string, string | undefined>>;
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const agentEnvironmentOptionKeys: Record<keyof AgentEnvironmentOptions, true> = {
  env: true,
  passEnv: true,
  inheritEnv: true,
  hostEnv: true,
};

/** Host variables every agent gets when set: its programs, locale, terminal and time zone. */
export const baseEnvironmentNames: readonly string[] = [
  "PATH",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "FORCE_COLOR",
  "TZ",
  // The way out to the provider: a proxy and the certificates it is trusted with.
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "ALL_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "all_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  // Windows cannot start a process without these.
  "SystemRoot",
  "COMSPEC",
  "PATHEXT",
];

/**
 * Every `LC_*` locale variable, and `BUN_JSC_*`: the tuning of Bun's engine, which runs opencode
 * (a host that starts many short-lived agents turns its top JIT tier off with `BUN_JSC_useFTLJIT=0`).
 */
const basePattern = /^(LC_[A-Z_]+|BUN_JSC_[A-Za-z0-9_]+)$/;

/** A variable name as a shell or `--pass-env` takes it. */
export const environmentNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface AgentEnvironmentInput extends AgentEnvironmentOptions {
  /** The variables the agent's own provider needs (its key, its endpoint), passed when set. */
  provider: readonly string[];
  /** With `inheritEnv`: variables that would point the agent at the user's own config. */
  drop?: RegExp;
  /** The attempt's private home and temp directory. */
  home: string | undefined;
  tmp: string;
  /** The host's environment; default `process.env`. */
  host?: Readonly<Record<string, string | undefined>>;
}

/**
 * An attempt's environment: the host's variables on the agent's list (`baseEnvironmentNames`,
 * `LC_*`, its provider's and `passEnv`), its private home and temp directory, then `env`. No
 * other host variable reaches the agent or what it runs. The OS sandbox reuses this list.
 */
export function agentEnvironment(input: AgentEnvironmentInput): Record<string, string> {
  checkPassEnv(input.passEnv);
  const host = input.host ?? input.hostEnv ?? process.env;
  // Windows names its variables case-insensitively (`Path`, `SYSTEMROOT`).
  const fold = process.platform === "win32" ? (name: string) => name.toUpperCase() : String;
  const listed = new Set(
    [...baseEnvironmentNames, ...input.provider, ...(input.passEnv ?? [])].map(fold),
  );
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(host)) {
    if (value === undefined) continue;
    const wanted = input.inheritEnv
      ? !input.drop?.test(key) && !key.startsWith("XDG_")
      : listed.has(fold(key)) || basePattern.test(key);
    if (wanted) env[key] = value;
  }
  // A passed name wins over the agent's own rules: the user asked for it by name.
  for (const name of input.passEnv ?? []) {
    const value = host[name];
    if (value !== undefined) env[name] = value;
  }
  if (input.home !== undefined) Object.assign(env, { HOME: input.home, USERPROFILE: input.home });
  Object.assign(env, { TMPDIR: input.tmp, TMP: input.tmp, TEMP: input.tmp });
  for (const [key, value] of Object.entries(input.env ?? {})) {
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/** Throws `InvalidConfigError` for a `passEnv` that is not a list of variable names. */
export function checkPassEnv(passEnv: unknown): void {
  if (passEnv === undefined) return;
  if (!Array.isArray(passEnv)) {
    throw new InvalidConfigError(`passEnv must be a list of variable names, got ${typeof passEnv}`);
  }
  for (const name of passEnv) {
    if (typeof name !== "string" || !environmentNamePattern.test(name)) {
      throw new InvalidConfigError(
        `passEnv: ${JSON.stringify(name)} is not an environment variable name`,
      );
    }
  }
}
