import { type Pricing, priceCall } from "@taskledger/core";
import type { OpencodeEvent } from "../events/agent-events.js";

/**
 * A step's usage with its cost: the host's pricing first, then opencode's own figure when above 0
 * (opencode reports 0 for a model its catalog has no price for, which is unknown, not free).
 */
export function priceStep(
  event: OpencodeEvent,
  model: string,
  pricing: Pricing | undefined,
): OpencodeEvent {
  if (event.type !== "step-finish") return event;
  const slash = model.indexOf("/");
  const call = {
    provider: model.slice(0, slash),
    model: model.slice(slash + 1),
    usage: event.usage,
  };
  const reported = event.usage.costUsd;
  const usage = priceCall(
    (c) => pricing?.(c) ?? (reported !== undefined && reported > 0 ? reported : undefined),
    call,
  );
  return { ...event, usage };
}
