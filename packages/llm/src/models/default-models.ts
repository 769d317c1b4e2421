import type { Provider } from "./create-model.js";

/** A provider's default models: the manager plans and judges, the agent (opencode) does the work. */
export interface DefaultModels {
  manager: string;
  /** The model id opencode uses, without the `provider/` prefix. */
  agent: string;
}

/**
 * The one list of default models. Each is from the provider's current generation, in its SDK's own
 * model list, not in that SDK's deprecation table, and in opencode's catalog; the check that the
 * SDKs stay quiet about them is `default-models.test.ts`. `openai-compatible` has none: its
 * models are whatever the server runs.
 */
export const defaultModels: Readonly<
  Record<Exclude<Provider, "openai-compatible">, DefaultModels>
> = {
  // The manager makes few calls, so it gets the strongest model; the agents spend most tokens.
  anthropic: { manager: "claude-opus-5-5", agent: "claude-sonnet-5" },
  openai: { manager: "gpt-6-sol", agent: "gpt-6-sol" },
  google: { manager: "gemini-3.8-flash", agent: "gemini-3.8-flash" },
  xai: { manager: "grok-4.7", agent: "grok-4.7" },
};
