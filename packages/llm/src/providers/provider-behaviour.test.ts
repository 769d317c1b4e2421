import {
  AbortedError,
  type LanguageModel,
  ModelError,
  progressJudgmentSchema,
  progressJudgmentSchemaName,
  StructuredOutputError,
  TaskLedgerError,
} from "@taskledger/core";
import { createModelServer, type ModelServer, type RecordedRequest } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type CreateModelOptions, createModel, type Provider } from "../index.js";

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read loosely in assertions
type Loose = any;

const judgment = {
  completed: true,
  summary: "Added slugify with tests.",
  outputData: "slugify lives in src/slugify.ts",
  feedback: "",
};
const judgeOutput = { name: progressJudgmentSchemaName, schema: progressJudgmentSchema };
const ask = [{ role: "user" as const, content: "Judge the attempt." }];
const plantedKey = "sk-planted-SECRET-0123456789abcdef";

interface ProviderCase {
  provider: Provider;
  baseURL: (server: ModelServer) => string;
  /** Checks the structured-output request went out in the provider's native form. */
  expectNativeSchema: (body: Loose, name: string) => void;
  /** Where the user's text sits in the wire body. */
  userTexts: (body: Loose) => string[];
}

const openaiLike = (provider: Provider): ProviderCase => ({
  provider,
  baseURL: (server) => server.openaiBaseURL,
  expectNativeSchema: (body, name) => {
    expect(body.response_format.type).toBe("json_schema");
    expect(body.response_format.json_schema.name).toBe(name);
    expect(body.response_format.json_schema.strict).toBe(true);
    expect(body.response_format.json_schema.schema.required).toContain("completed");
  },
  userTexts: (body) =>
    body.messages.filter((m: Loose) => m.role === "user").map((m: Loose) => m.content),
});

const cases: ProviderCase[] = [
  openaiLike("openai"),
  openaiLike("xai"),
  openaiLike("openai-compatible"),
  {
    provider: "anthropic",
    baseURL: (server) => server.anthropicBaseURL,
    expectNativeSchema: (body) => {
      expect(body.output_config.format.type).toBe("json_schema");
      expect(body.output_config.format.schema.additionalProperties).toBe(false);
      expect(body.max_tokens).toBeGreaterThan(0);
    },
    userTexts: (body) =>
      body.messages.filter((m: Loose) => m.role === "user").map((m: Loose) => m.content),
  },
  {
    provider: "google",
    baseURL: (server) => server.googleBaseURL,
    expectNativeSchema: (body) => {
      expect(body.generationConfig.responseMimeType).toBe("application/json");
      expect(body.generationConfig.responseJsonSchema.required).toContain("completed");
    },
    userTexts: (body) =>
      body.contents
        .filter((c: Loose) => c.role === "user")
        .map((c: Loose) => c.parts.map((p: Loose) => p.text).join("")),
  },
];

describe.each(cases)("$provider through its SDK", (spec) => {
  let server: ModelServer;
  const make = (options: Partial<CreateModelOptions> = {}): LanguageModel =>
    createModel({
      provider: spec.provider,
      model: "scripted-model",
      apiKey: plantedKey,
      baseURL: spec.baseURL(server),
      backoff: { initialDelayMs: 1, maxDelayMs: 5 },
      ...options,
    });
  const body = (index: number): Loose => server.requests[index]?.body;

  beforeEach(async () => {
    server = await createModelServer();
  });
  afterEach(async () => {
    expect(server.unexpected).toBe(0);
    await server.close();
  });

  it("makes a structured call through the native schema feature and validates the answer", async () => {
    server.push({ text: JSON.stringify(judgment) });
    const result = await make().generate({
      system: "You judge attempts.",
      messages: ask,
      output: judgeOutput,
    });
    expect(result.object).toEqual(judgment);
    expect(JSON.parse(result.text)).toEqual(judgment);
    expect(result.finishReason).toBe("stop");
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.model).toBe("scripted-model");
    spec.expectNativeSchema(body(0), progressJudgmentSchemaName);
    expect(JSON.stringify(body(0))).toContain("You judge attempts.");
    expect(spec.userTexts(body(0))).toEqual(["Judge the attempt."]);
  });

  it("returns plain text, usage and the finish reason of an unstructured call", async () => {
    server.push({
      text: "plain answer",
      usage: { inputTokens: 120, outputTokens: 30, cacheReadTokens: 10 },
    });
    const result = await make().generate({ messages: ask });
    expect(result).toMatchObject({ text: "plain answer", object: undefined, finishReason: "stop" });
    expect(result.usage).toMatchObject({ inputTokens: 120, outputTokens: 30, cacheReadTokens: 10 });
    expect(result.usage.costUsd).toBeUndefined();
    // Unknown is said with the model's name, never as a cost of 0.
    expect(result.usage.unpricedModels).toEqual([`${spec.provider}/scripted-model`]);
  });

  it("prices usage from the price table when the model is in it", async () => {
    server.push({ text: "ok", usage: { inputTokens: 1_000_000, outputTokens: 500_000 } });
    const model = make({
      prices: { "scripted-model": { inputPerMillion: 3, outputPerMillion: 15 } },
    });
    const result = await model.generate({ messages: ask });
    expect(result.usage.costUsd).toBeCloseTo(3 + 7.5, 6);
  });

  it("surfaces `length` and `content-filter` instead of hiding them", async () => {
    server.push({ text: "cut off mid-sen", finishReason: "length" });
    server.push({ text: "", finishReason: "content-filter" });
    const model = make();
    expect((await model.generate({ messages: ask })).finishReason).toBe("length");
    expect((await model.generate({ messages: ask })).finishReason).toBe("content-filter");
  });

  it("does not repair a structured answer cut off by the token limit", async () => {
    server.push({ text: '{"completed": true, "summ', finishReason: "length" });
    const error = await make()
      .generate({ messages: ask, output: judgeOutput, maxOutputTokens: 64 })
      .catch((e: unknown) => e);
    expect(StructuredOutputError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/length/);
    expect(server.requests).toHaveLength(1);
  });

  it("rejects an answer that misses the schema after one call, with its usage, and leaves the repair to the caller", async () => {
    server.push({
      text: JSON.stringify({ completed: "yes", summary: "s" }),
      usage: { inputTokens: 7, outputTokens: 3 },
    });
    const error = await make()
      .generate({ messages: ask, output: judgeOutput })
      .catch((e: unknown) => e);
    expect(StructuredOutputError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/does not match the schema/);
    expect((error as StructuredOutputError).usage).toMatchObject({
      inputTokens: 7,
      outputTokens: 3,
    });
    expect(server.requests).toHaveLength(1);
  });

  it("accepts JSON wrapped in a markdown fence without a repair call", async () => {
    server.push({ text: `\`\`\`json\n${JSON.stringify(judgment)}\n\`\`\`` });
    const result = await make().generate({ messages: ask, output: judgeOutput });
    expect(result.object).toEqual(judgment);
    expect(server.requests).toHaveLength(1);
  });

  it("retries a 429 and a 500 with backoff, then succeeds", async () => {
    server.push(
      { status: 429, headers: { "retry-after": "0" } },
      { status: 500 },
      { text: JSON.stringify(judgment) },
    );
    const result = await make({ maxRetries: 2 }).generate({ messages: ask, output: judgeOutput });
    expect(result.object).toEqual(judgment);
    expect(server.requests).toHaveLength(3);
  });

  it("retries a truncated response body", async () => {
    server.push({ rawBody: '{"id": "x", "choi' }, { text: "whole" });
    const result = await make({ maxRetries: 1 }).generate({ messages: ask });
    expect(result.text).toBe("whole");
    expect(server.requests).toHaveLength(2);
  });

  it("gives up after maxRetries with a retryable ModelError carrying the status", async () => {
    server.push({ status: 503 }, { status: 503 });
    const error = await make({ maxRetries: 1 })
      .generate({ messages: ask })
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ provider: spec.provider, statusCode: 503, isRetryable: true });
    expect(server.requests).toHaveLength(2);
  });

  it.each([401, 403, 400])("does not retry a %i, and names provider and status", async (status) => {
    server.push({ status });
    const error = await make({ maxRetries: 3 })
      .generate({ messages: ask })
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      provider: spec.provider,
      statusCode: status,
      isRetryable: false,
    });
    expect((error as Error).message).toContain(spec.provider);
    expect((error as Error).message).toContain(String(status));
    expect(server.requests).toHaveLength(1);
  });

  it("never puts the API key in an error, its cause chain or its JSON, even when echoed", async () => {
    const echo = `Incorrect API key provided: ${plantedKey}`;
    server.push({ status: 401, body: { error: { message: echo, type: "invalid_api_key" } } });
    const error = await make()
      .generate({ messages: ask })
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(headerValues(server.requests[0])).toContain(plantedKey);
    let text = "";
    for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
      text += `${String(e)}\n${(e as Error).stack ?? ""}\n${JSON.stringify(e)}\n`;
    }
    expect(text).toContain("[redacted]");
    expect(text).not.toContain(plantedKey);
    expect(text).not.toContain("SECRET");
  });

  it("times out a server that never answers, retrying once per maxRetries", async () => {
    server.push({ hang: true }, { hang: true });
    const error = await make({ timeout: 150, maxRetries: 1 })
      .generate({ messages: ask })
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/within 150 ms/);
    expect((error as ModelError).isRetryable).toBe(true);
    expect(server.requests).toHaveLength(2);
  });

  it("stops at once, without retrying, when the caller aborts mid-request", async () => {
    server.push({ hang: true });
    const controller = new AbortController();
    const pending = make({ maxRetries: 3 })
      .generate({ messages: ask, abortSignal: controller.signal })
      .catch((e: unknown) => e);
    await vi.waitFor(() => expect(server.requests).toHaveLength(1));
    controller.abort();
    const error = await pending;
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it("sends nothing when the signal is already aborted", async () => {
    const error = await make()
      .generate({ messages: ask, abortSignal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(server.requests).toHaveLength(0);
  });

  it("reports an unreachable server as a retryable ModelError without a status", async () => {
    const closed = await createModelServer();
    const url = spec.baseURL(closed);
    await closed.close();
    const error = await make({ baseURL: url, maxRetries: 0 })
      .generate({ messages: ask })
      .catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(TaskLedgerError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: undefined, isRetryable: true });
  });
});

function headerValues(request: RecordedRequest | undefined): string {
  return Object.values(request?.headers ?? {})
    .flat()
    .join("\n");
}
