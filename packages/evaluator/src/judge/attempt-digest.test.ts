import { estimateTokens, InvalidConfigError, type ToolCallRecord } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { attemptResult } from "../test-support/fixtures.js";
import { digestAttempt } from "./attempt-digest.js";

const answer = "FINAL ANSWER: slugify lives in src/slugify.ts and all 14 tests pass.";

/** About a million tokens of tool calls: 2,000 calls, each with a 2,000-character output. */
function millionTokenCalls(): ToolCallRecord[] {
  return Array.from({ length: 2000 }, (_, i) => ({
    tool: i % 3 === 0 ? "bash" : "edit",
    status: "completed",
    input: `step ${i} ${"i".repeat(200)}`,
    output: `${"o".repeat(1990)} OUT-${i}`,
  }));
}

describe("digestAttempt", () => {
  it("stays within its budget for a transcript of a million tokens and keeps the final answer", () => {
    const toolCalls = millionTokenCalls();
    const finalText = `${"thinking out loud ".repeat(220_000)}\n${answer}`;
    const raw = JSON.stringify(toolCalls).length + finalText.length;
    expect(estimateTokens(" ".repeat(raw))).toBeGreaterThan(1_000_000);

    const digest = digestAttempt(
      attemptResult({
        outcome: "truncated",
        toolCalls,
        finalText,
        filesChanged: ["src/slugify.ts", "src/slugify.test.ts"],
        stepFinishReasons: [...Array(300).fill("tool-calls"), "length"],
        error: "output ran out",
      }),
    );
    expect(estimateTokens(digest)).toBeLessThanOrEqual(3000);
    expect(digest).toContain(answer);
    expect(digest).toContain("outcome: truncated");
    expect(digest).toContain("error: output ran out");
    expect(digest).toContain("last: tool-calls, tool-calls, tool-calls, tool-calls, length");
    expect(digest).toContain("src/slugify.test.ts");
    // The newest tool call is kept; the oldest are counted, not shown.
    expect(digest).toContain("[2000] edit");
    expect(digest).toContain("OUT-1999");
    expect(digest).not.toContain("OUT-0 ");
    expect(digest).toMatch(/Earlier, not shown: \d+ call\(s\): edit ×\d+, bash ×\d+/);
    // Calls before the detailed ones appear as one line each.
    expect(digest).toMatch(/\[1990\] (bash|edit) \(completed\) step 1989/);
  });

  it("honours a smaller budget", () => {
    const digest = digestAttempt(
      attemptResult({
        toolCalls: millionTokenCalls(),
        finalText: `${"x".repeat(100_000)} ${answer}`,
      }),
      { maxTokens: 500 },
    );
    expect(estimateTokens(digest)).toBeLessThanOrEqual(500);
    expect(digest).toContain(answer);
  });

  it("shows a small attempt whole", () => {
    const calls = [
      { tool: "write", status: "completed", input: "src/a.ts", output: "wrote 3 lines" },
      { tool: "bash", status: "completed", input: "npm test", output: "1 passed" },
    ];
    const digest = digestAttempt(attemptResult({ toolCalls: calls, filesChanged: ["src/a.ts"] }));
    expect(digest).toContain("## Tool calls (2; all shown)");
    expect(digest).toContain("[1] write (completed) src/a.ts");
    expect(digest).toContain("→ 1 passed");
    expect(digest).toContain("I wrote slugify.ts and its tests");
  });

  it("lists many files within its share and counts the rest", () => {
    const files = Array.from({ length: 5000 }, (_, i) => `src/generated/file-${i}.ts`);
    const digest = digestAttempt(attemptResult({ filesChanged: files }));
    expect(estimateTokens(digest)).toBeLessThanOrEqual(3000);
    expect(digest).toContain("## Files written (5000)");
    expect(digest).toMatch(/… and \d+ more/);
  });

  it("tells the judge what the sandbox refused, bounded, so feedback can say it tried to leave", () => {
    const refusals = Array.from({ length: 30 }, (_, i) => ({
      kind: "write" as const,
      target: `/home/u/f${i}`,
    }));
    refusals.unshift({ kind: "network", target: "example.com:443" } as never);
    const digest = digestAttempt(attemptResult({ refusals }));
    expect(digest).toContain("## Refused by the sandbox");
    expect(digest).toContain("- network: example.com:443");
    expect(digest).toContain("- … and 19 more");
    expect(digestAttempt(attemptResult())).not.toContain("Refused by the sandbox");
  });

  it("tells the judge what was left out for being outside the run's directory", () => {
    const digest = digestAttempt(
      attemptResult({ outsideCwd: { paths: ["ROOT_CONFIG.txt", "lib/x.ts"], count: 2 } }),
    );
    expect(digest).toContain(
      "left out: 2 path(s) changed outside the run's directory were discarded, not kept: ROOT_CONFIG.txt, lib/x.ts",
    );
    expect(digestAttempt(attemptResult())).not.toContain("left out");
  });

  it("refuses a budget too small to hold a digest", () => {
    expect(() => digestAttempt(attemptResult(), { maxTokens: 50 })).toThrow(InvalidConfigError);
  });
});
