import { emptyUsage } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import type { OpencodeEvent } from "../events/agent-events.js";
import { priceStep } from "./price-step.js";

const step = (costUsd?: number): OpencodeEvent => ({
  type: "step-finish",
  reason: "stop",
  usage: {
    ...emptyUsage(),
    inputTokens: 1000,
    outputTokens: 100,
    ...(costUsd === undefined ? {} : { costUsd }),
  },
});

describe("priceStep", () => {
  it("prices a step with the host's pricing over opencode's figure", () => {
    const priced = priceStep(step(0.5), "anthropic/claude-sonnet-5", () => 0.25);
    expect(priced).toMatchObject({ usage: { costUsd: 0.25 } });
  });

  it("keeps opencode's cost when the pricing does not know the model", () => {
    const priced = priceStep(step(0.5), "anthropic/claude-sonnet-5", () => undefined);
    expect(priced).toMatchObject({ usage: { costUsd: 0.5 } });
  });

  it("names the model when nobody knows its price, instead of a cost of 0", () => {
    const priced = priceStep(step(0), "taskledger-compatible/scripted", undefined);
    if (priced.type !== "step-finish") throw new Error("not a step");
    expect(priced.usage.costUsd).toBeUndefined();
    expect(priced.usage.unpricedModels).toEqual(["taskledger-compatible/scripted"]);
  });

  it("leaves other events alone", () => {
    const text: OpencodeEvent = { type: "text", text: "hi" };
    expect(priceStep(text, "a/b", () => 1)).toBe(text);
  });
});
