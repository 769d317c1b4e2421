import type { ModelServer } from "./model-server.js";

/**
 * The `provider` section of an opencode config that sends every model call to the scripted model
 * server, through the `@ai-sdk/openai-compatible` provider opencode bundles. Use the model as
 * `<id>/<model>`, e.g. `scripted/test-model`.
 */
export function scriptedOpencodeProvider(
  server: Pick<ModelServer, "openaiBaseURL">,
  options: { id?: string; models?: string[] } = {},
): Record<string, unknown> {
  const models = options.models ?? ["test-model"];
  return {
    [options.id ?? "scripted"]: {
      npm: "@ai-sdk/openai-compatible",
      name: "Scripted",
      options: { baseURL: server.openaiBaseURL, apiKey: "test-key" },
      models: Object.fromEntries(models.map((model) => [model, { name: model }])),
    },
  };
}
