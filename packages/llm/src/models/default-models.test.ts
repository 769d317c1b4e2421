import { progressJudgmentSchema, progressJudgmentSchemaName } from "@taskledger/core";
import { createModelServer, type ModelServer } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createModel, defaultModels, type ModelWarning, type Provider } from "../index.js";

const verdict = { completed: true, summary: "Done.", outputData: "", feedback: "" };
const judge = { name: progressJudgmentSchemaName, schema: progressJudgmentSchema };
const ask = [{ role: "user" as const, content: "Judge the attempt." }];

const baseURLs: Record<Exclude<Provider, "openai-compatible">, (s: ModelServer) => string> = {
  anthropic: (s) => s.anthropicBaseURL,
  openai: (s) => s.openaiBaseURL,
  google: (s) => s.googleBaseURL,
  xai: (s) => s.openaiBaseURL,
};

let server: ModelServer;
/** Everything that could carry an SDK's warning to a person: the console, Node's channel, stderr. */
let printed: () => string[];

beforeEach(async () => {
  server = await createModelServer({
    replies: () => ({ text: JSON.stringify(verdict), usage: { inputTokens: 10, outputTokens: 5 } }),
  });
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  const error = vi.spyOn(console, "error").mockImplementation(() => {});
  const emit = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  printed = () =>
    [warn, error, emit, stderr].flatMap((spy) => spy.mock.calls.map((args) => String(args[0])));
});

afterEach(async () => {
  vi.restoreAllMocks();
  expect(server.unexpected).toBe(0);
  await server.close();
});

const cases = Object.entries(defaultModels).flatMap(([provider, models]) =>
  (["manager", "agent"] as const).map((role) => ({
    provider: provider as keyof typeof defaultModels,
    role,
    model: models[role],
  })),
);

describe("the default models", () => {
  it.each(cases)(
    "$provider's default $role model ($model) draws no warning from its SDK",
    async ({ provider, model }) => {
      const warnings: ModelWarning[] = [];
      const client = createModel({
        provider,
        model,
        apiKey: "test-key",
        baseURL: baseURLs[provider](server),
        onWarning: (warning) => warnings.push(warning),
      });
      const structured = await client.generate({ messages: ask, output: judge });
      const plain = await client.generate({ messages: ask });
      expect(structured.object).toEqual(verdict);
      expect(plain.text).toBe(JSON.stringify(verdict));
      expect(server.requests.map((r) => r.model)).toEqual([model, model]);
      expect({ warnings, printed: printed() }).toEqual({ warnings: [], printed: [] });
    },
  );
});

describe("a model its SDK calls deprecated", () => {
  it("reaches the host once, as one line, and never as the SDK's raw console output", async () => {
    const warnings: ModelWarning[] = [];
    const client = createModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "test-key",
      baseURL: server.anthropicBaseURL,
      onWarning: (warning) => warnings.push(warning),
    });
    await client.generate({ messages: ask, output: judge });
    await client.generate({ messages: ask });
    expect(printed()).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      provider: "anthropic",
      modelId: "claude-sonnet-4-5",
      deprecated: true,
    });
    expect(warnings[0]?.message).toMatch(/^The model 'claude-sonnet-4-5' is deprecated .*2026\./);
    expect(warnings[0]?.message).not.toContain("\n");
  });

  it("goes to process.emitWarning, once, when the host gives no onWarning", async () => {
    const client = createModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "test-key",
      baseURL: server.anthropicBaseURL,
    });
    await client.generate({ messages: ask });
    await client.generate({ messages: ask });
    const emitted = vi.mocked(process.emitWarning).mock.calls;
    expect(emitted).toHaveLength(1);
    expect(String(emitted[0]?.[0])).toMatch(
      /^anthropic\/claude-sonnet-4-5: The model .* deprecated/,
    );
    expect(vi.mocked(console.warn)).not.toHaveBeenCalled();
  });
});

describe("a throwing onWarning", () => {
  it("does not fail the call it was told about", async () => {
    const client = createModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "test-key",
      baseURL: server.anthropicBaseURL,
      onWarning: () => {
        throw new Error("listener broke");
      },
    });
    await expect(client.generate({ messages: ask })).resolves.toMatchObject({
      finishReason: "stop",
    });
  });
});
