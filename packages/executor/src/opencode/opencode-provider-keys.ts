import { opencodeProviderEnv } from "./opencode-provider-env.js";

/**
 * The variables opencode needs for the providers of `models`: a built-in provider's own (its
 * catalogue's `env`), a configured provider's `env`, and every `{env:NAME}` the config names.
 */
export function opencodeKeyVariables(
  models: readonly string[],
  config: Record<string, unknown> | undefined,
): string[] {
  const names = new Set<string>();
  const configured = (config?.provider ?? {}) as Record<string, { env?: unknown } | undefined>;
  for (const model of models) {
    const provider = model.slice(0, model.indexOf("/"));
    if (Object.hasOwn(opencodeProviderEnv, provider)) {
      for (const name of opencodeProviderEnv[provider] ?? []) names.add(name);
    }
    const own = Object.hasOwn(configured, provider) ? configured[provider]?.env : undefined;
    if (Array.isArray(own)) for (const name of own) if (typeof name === "string") names.add(name);
  }
  for (const match of JSON.stringify(config ?? {}).matchAll(/\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    names.add(match[1] as string);
  }
  return [...names];
}
