import type { Evaluator } from "../ports/evaluator.js";
import type { AttemptResult } from "../ports/executor.js";
import { emptyUsage } from "../usage/usage.js";

const outputLimit = 8000;

const outcomeFeedback: Record<AttemptResult["outcome"], string> = {
  finished: "",
  truncated:
    "The previous attempt was cut off before it finished (its output ran out). Work in smaller " +
    "steps, keep messages short and finish the remaining work.",
  error: "The previous attempt ended with an error.",
  timeout: "The previous attempt ran out of time. Do less per step and finish the remaining work.",
  cancelled: "The previous attempt was cancelled.",
  // Never judged: the runner waits for the provider and runs it again, telling the agent nothing.
  "rate-limited": "",
};

/**
 * The evaluator used when no other is given: an attempt is complete when the agent finished on
 * its own. It needs no model; the LLM judge of `@taskledger/evaluator` replaces it.
 */
export const outcomeEvaluator: Evaluator = {
  async evaluate({ result }) {
    const completed = result.outcome === "finished";
    const text = result.finalText.trim();
    const feedback = completed
      ? ""
      : [outcomeFeedback[result.outcome], result.error ? `Error: ${result.error}` : ""]
          .filter(Boolean)
          .join(" ");
    return {
      completed,
      ...(completed ? {} : { incomplete: "not-finished" as const }),
      summary: text.slice(0, 500) || `The attempt ended: ${result.outcome}.`,
      outputData: completed ? text.slice(0, outputLimit) : "",
      feedback,
      evidence: [
        {
          source: "finish-reason",
          passed: completed,
          detail: `outcome ${result.outcome}; steps ${result.stepFinishReasons.join(", ") || "none"}`,
        },
      ],
      usage: emptyUsage(),
    };
  },
};
