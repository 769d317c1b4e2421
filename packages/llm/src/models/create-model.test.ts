import {
  InvalidConfigError,
  progressJudgmentSchema,
  progressJudgmentSchemaName,
} from "@taskledger/core";
import { createModelServer, type ModelServer } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModel } from "../index.js";

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read loosely in assertions
type Loose = any;

const judgment = { completed: false, summary: "s", outputData: "", feedback: "run the tests" };
const judgeOutput = { name: progressJudgmentSchemaName, schema: progressJudgmentSchema };
const ask = [{ role: "user" as const, content: "Judge." }];

let server: ModelServer;
beforeEach(async () => {
  server = await createModelServer();
});
afterEach(async () => {
  expect(server.unexpected).toBe(0);
  await server.close();
});
const body = (index = 0): Loose => server.requests[index]?.body;
const header = (name: string, index = 0) => String(server.requests[index]?.headers[name] ?? "");

describe("createModel options", () => {
  it("rejects unusable options with InvalidConfigError", () => {
    const bad = [
      () => createModel({ provider: "nope" as "openai", model: "m", apiKey: "k" }),
      () => createModel({ provider: "openai", model: " ", apiKey: "k" }),
      () => createModel({ provider: "openai", model: "m", apiKey: "k", timeout: 0 }),
      () => createModel({ provider: "openai", model: "m", apiKey: "k", maxRetries: -1 }),
      () => createModel({ provider: "openai", model: "m", apiKey: "k", jsonMode: "tool" }),
      () => createModel({ provider: "openai-compatible", model: "m" }),
      () => createModel({ provider: "anthropic", model: "m", env: {} }),
    ];
    for (const make of bad) expect(() => make()).toThrowError(InvalidConfigError);
  });

  it("names the key variables when no key is found", () => {
    expect(() => createModel({ provider: "google", model: "m", env: {} })).toThrowError(
      /GEMINI_API_KEY or GOOGLE_API_KEY/,
    );
  });

  it.each([
    ["openai", "OPENAI_API_KEY", "authorization", "Bearer env-openai"],
    ["xai", "XAI_API_KEY", "authorization", "Bearer env-xai"],
    ["google", "GOOGLE_API_KEY", "x-goog-api-key", "env-google"],
  ] as const)("reads %s's key from %s", async (provider, variable, headerName, expected) => {
    server.push({ text: "ok" });
    const key = expected.replace("Bearer ", "");
    const model = createModel({
      provider,
      model: "m",
      baseURL: provider === "google" ? server.googleBaseURL : server.openaiBaseURL,
      env: { [variable]: key },
    });
    await model.generate({ messages: ask });
    expect(header(headerName)).toBe(expected);
  });

  it("prefers GEMINI_API_KEY and sends no other provider's key to a compatible server", async () => {
    server.push({ text: "ok" }, { text: "ok" });
    await createModel({
      provider: "google",
      model: "m",
      baseURL: server.googleBaseURL,
      env: { GEMINI_API_KEY: "gemini", GOOGLE_API_KEY: "google" },
    }).generate({ messages: ask });
    expect(header("x-goog-api-key")).toBe("gemini");
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = "sk-should-not-leave-0123";
    try {
      await createModel({
        provider: "openai-compatible",
        model: "local",
        baseURL: server.openaiBaseURL,
      }).generate({ messages: ask });
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
    expect(header("authorization", 1)).not.toContain("sk-should-not-leave");
  });

  it("sends max_completion_tokens to OpenAI and max_tokens to compatible servers", async () => {
    server.push({ text: "a" }, { text: "b" });
    const common = { model: "m", apiKey: "k", baseURL: server.openaiBaseURL };
    await createModel({ provider: "openai", ...common }).generate({
      messages: ask,
      maxOutputTokens: 99,
    });
    await createModel({ provider: "openai-compatible", ...common, maxOutputTokens: 77 }).generate({
      messages: ask,
    });
    expect(body(0).max_completion_tokens).toBe(99);
    expect(body(1).max_tokens).toBe(77);
  });
  it("lets Anthropic take a large max_tokens without streaming (the SDK's 10-minute guard)", async () => {
    server.push({ text: "ok" });
    const model = createModel({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      apiKey: "k",
      baseURL: server.anthropicBaseURL,
    });
    expect((await model.generate({ messages: ask, maxOutputTokens: 64_000 })).text).toBe("ok");
    expect(body().max_tokens).toBe(64_000);
  });
});

describe("jsonMode fallbacks", () => {
  it("`json-object` asks for json_object and puts the schema in the system prompt", async () => {
    server.push({ text: JSON.stringify(judgment) });
    const model = createModel({
      provider: "openai-compatible",
      model: "m",
      baseURL: server.openaiBaseURL,
      jsonMode: "json-object",
    });
    const result = await model.generate({ system: "Judge.", messages: ask, output: judgeOutput });
    expect(result.object).toEqual(judgment);
    expect(body().response_format).toEqual({ type: "json_object" });
    const system = body().messages[0];
    expect(system.role).toBe("system");
    expect(system.content).toMatch(/^Judge\./);
    expect(system.content).toContain('"feedback"');
  });

  it("`prompt` sends no response_format at all", async () => {
    server.push({ text: JSON.stringify(judgment) });
    const model = createModel({
      provider: "openai-compatible",
      model: "m",
      baseURL: server.openaiBaseURL,
      jsonMode: "prompt",
    });
    expect((await model.generate({ messages: ask, output: judgeOutput })).object).toEqual(judgment);
    expect(body().response_format).toBeUndefined();
    expect(body().messages[0].content).toContain(progressJudgmentSchemaName);
  });

  it("`json-object` on Gemini sets the JSON mime type without a schema", async () => {
    server.push({ text: JSON.stringify(judgment) });
    const model = createModel({
      provider: "google",
      model: "m",
      apiKey: "k",
      baseURL: server.googleBaseURL,
      jsonMode: "json-object",
    });
    expect((await model.generate({ messages: ask, output: judgeOutput })).object).toEqual(judgment);
    expect(body().generationConfig.responseMimeType).toBe("application/json");
    expect(body().generationConfig.responseJsonSchema).toBeUndefined();
  });

  it("`tool` on Anthropic forces a tool named after the output and reads its input", async () => {
    server.push({
      toolCalls: [{ name: progressJudgmentSchemaName, arguments: judgment }],
      usage: { inputTokens: 50, outputTokens: 20, cacheReadTokens: 5, cacheWriteTokens: 9 },
    });
    const model = createModel({
      provider: "anthropic",
      model: "m",
      apiKey: "k",
      baseURL: server.anthropicBaseURL,
      jsonMode: "tool",
    });
    const result = await model.generate({ messages: ask, output: judgeOutput });
    expect(result.object).toEqual(judgment);
    expect(result.finishReason).toBe("stop");
    expect(result.usage).toMatchObject({
      inputTokens: 50,
      outputTokens: 20,
      cacheReadTokens: 5,
      cacheWriteTokens: 9,
    });
    expect(body().tool_choice).toEqual({ type: "tool", name: progressJudgmentSchemaName });
    expect(body().tools[0].input_schema.required).toContain("feedback");
    expect(body().output_config).toBeUndefined();
  });
});
