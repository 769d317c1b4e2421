/** What an agent executor's options say about the environment its process gets. */
export interface AgentEnvironmentOptions {
  /** Extra environment for the agent (API keys, base URLs, …). */
  env?: Record<string, string>;
  /** Pass the host's own environment through (minus the agent's own config variables); default true. */
  inheritEnv?: boolean;
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const agentEnvironmentOptionKeys: Record<keyof AgentEnvironmentOptions, true> = {
  env: true,
  inheritEnv: true,
};

/**
 * An attempt's environment for an agent CLI: the host's (or only PATH), minus the variables that
 * would point the agent at the user's own config (`drop`), with a private home and temp directory.
 */
export function agentEnvironment(
  options: AgentEnvironmentOptions,
  own: { drop: RegExp; home: string; tmp: string },
): Record<string, string> {
  const base = options.inheritEnv === false ? { PATH: process.env.PATH } : process.env;
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    if (value !== undefined && !own.drop.test(key) && !key.startsWith("XDG_")) env[key] = value;
  }
  return Object.assign(env, {
    HOME: own.home,
    USERPROFILE: own.home,
    TMPDIR: own.tmp,
    TMP: own.tmp,
    TEMP: own.tmp,
  });
}
