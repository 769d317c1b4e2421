import { describe, expect, it } from "vitest";
import { defaultRunSettings } from "../run/manager-options.js";
import { resolveRunSettings } from "../settings/run-settings.js";
import { priceCall } from "./call-cost.js";
import { addUsage, emptyUsage, knownCost } from "./usage.js";

const tokens = { ...emptyUsage(), inputTokens: 100, outputTokens: 10 };

describe("cost of usage", () => {
  it("a call at no known price names its model instead of costing 0", () => {
    const usage = priceCall(() => undefined, { provider: "p", model: "m", usage: tokens });
    expect(usage.costUsd).toBeUndefined();
    expect(usage.unpricedModels).toEqual(["p/m"]);
    expect(knownCost(usage)).toBeUndefined();
  });

  it("a pricing that throws leaves the cost unknown", () => {
    const usage = priceCall(
      () => {
        throw new Error("bad table");
      },
      { provider: "p", model: "m", usage: tokens },
    );
    expect(usage.unpricedModels).toEqual(["p/m"]);
  });

  it("sums known costs and keeps every unpriced model, once", () => {
    const a = priceCall(() => 0.5, { provider: "p", model: "a", usage: tokens });
    const b = priceCall(() => undefined, { provider: "p", model: "b", usage: tokens });
    const sum = addUsage(a, b, b, a);
    expect(sum.costUsd).toBe(1);
    expect(sum.unpricedModels).toEqual(["p/b"]);
    expect(knownCost(sum)).toBeUndefined();
    expect(knownCost(addUsage(a, a))).toBe(1);
    expect(knownCost(emptyUsage())).toBe(0);
  });

  it("a money budget must be dollars above 0", () => {
    expect(resolveRunSettings(defaultRunSettings, { budget: { maxCostUsd: 2.5 } }).budget).toEqual({
      maxCostUsd: 2.5,
    });
    expect(() => resolveRunSettings(defaultRunSettings, { budget: { maxCostUsd: 0 } })).toThrow(
      /budget.maxCostUsd/,
    );
  });
});
