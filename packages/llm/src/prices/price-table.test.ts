import { emptyUsage } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { createPricing } from "../index.js";

const million = { ...emptyUsage(), inputTokens: 1_000_000, outputTokens: 1_000_000 };

describe("createPricing", () => {
  it("prices a model of the bundled table, the default agent model among them", () => {
    const pricing = createPricing();
    const cost = pricing({ provider: "anthropic", model: "claude-sonnet-5", usage: million });
    expect(cost).toBeGreaterThan(0);
  });

  it("prices cache reads apart from fresh input tokens", () => {
    const pricing = createPricing();
    const fresh = { ...emptyUsage(), inputTokens: 1_000_000 };
    const cached = { ...emptyUsage(), cacheReadTokens: 1_000_000 };
    const call = { provider: "anthropic", model: "claude-sonnet-5" };
    const freshCost = pricing({ ...call, usage: fresh })!;
    const cachedCost = pricing({ ...call, usage: cached })!;
    expect(cachedCost).toBeGreaterThan(0);
    expect(cachedCost).toBeLessThan(freshCost);
  });

  it("knows no price for a model missing from the table or from an OpenAI-compatible server", () => {
    const pricing = createPricing();
    expect(pricing({ provider: "xai", model: "no-such-model-9", usage: million })).toBeUndefined();
    expect(
      pricing({ provider: "openai-compatible", model: "claude-sonnet-5", usage: million }),
    ).toBeUndefined();
  });

  it("takes the host's price first, by provider/model or by model id", () => {
    const pricing = createPricing({
      prices: {
        "openai-compatible/local": { inputPerMillion: 1, outputPerMillion: 2 },
        "claude-sonnet-5": { inputPerMillion: 100, outputPerMillion: 100 },
      },
    });
    expect(pricing({ provider: "openai-compatible", model: "local", usage: million })).toBe(3);
    expect(pricing({ provider: "anthropic", model: "claude-sonnet-5", usage: million })).toBe(200);
  });

  it("leaves the table out when asked to", () => {
    const pricing = createPricing({ table: false });
    expect(pricing({ provider: "anthropic", model: "claude-sonnet-5", usage: million })).toBe(
      undefined,
    );
  });
});
