import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { AbortedError, clipMiddle, oneLine, type ReviewPlan } from "@taskledger/core";
import { redact } from "../security/redact.js";
import { limits } from "./tool-schemas.js";

/** The client can show a form to its user (MCP elicitation). */
export function canElicit(server: Server): boolean {
  return server.getClientCapabilities()?.elicitation?.form !== undefined;
}

/**
 * Asks the client's user about a plan through an MCP elicitation form: accepted with "run" →
 * approve; accepted without it, or declined → reject. Dismissed, timed out or failed → throws,
 * leaving the question to `answer_plan_review`. The form shows no value of `secrets`.
 */
export function elicitReview(
  server: Server,
  timeoutMs: number,
  secrets: readonly string[],
): ReviewPlan {
  return async (review) => {
    const result = await server.elicitInput(
      {
        mode: "form",
        message: redact(describeReview(review), secrets),
        requestedSchema: {
          type: "object",
          properties: {
            run: {
              type: "boolean",
              title: review.kind === "plan" ? "Run this plan" : "Apply this change",
              default: true,
            },
            reason: { type: "string", title: "Why not (when not running it)", maxLength: 1000 },
          },
          required: ["run"],
        },
      },
      { signal: review.abortSignal, timeout: timeoutMs },
    );
    if (result.action === "accept") {
      if (result.content?.run !== false) return { action: "approve" };
      const reason = result.content?.reason;
      return {
        action: "reject",
        reason: typeof reason === "string" && reason.trim() ? reason : "rejected in the client",
      };
    }
    if (result.action === "decline") return { action: "reject", reason: "declined in the client" };
    throw new AbortedError("The review form was dismissed; answer_plan_review can answer it.");
  };
}

function describeReview(review: Parameters<ReviewPlan>[0]): string {
  const lines = [
    review.kind === "plan"
      ? `taskledger planned ${review.ledger.subTasks.length} sub-task(s) for: ${oneLine(review.request, limits.short)}`
      : `taskledger proposes to replace ${(review.replaced ?? []).join(", ")}: ${oneLine(review.reason ?? "it failed", limits.short)}`,
    ...review.ledger.subTasks
      .slice(0, limits.subTasks)
      .map(
        (s, i) =>
          `${i + 1}. ${s.id}: ${oneLine(s.title, limits.short)}${s.dependsOn.length ? ` (after ${s.dependsOn.join(", ")})` : ""}`,
      ),
  ];
  return clipMiddle(lines.join("\n"), 8000);
}
