import { describe, expect, it } from "vitest";
import { attemptResult, checkContext } from "../test-support/fixtures.js";
import { finishReasonChecker } from "./finish-reason-checker.js";

const check = (overrides: Parameters<typeof attemptResult>[0]) =>
  finishReasonChecker().check(checkContext({ result: attemptResult(overrides) }));

describe("finishReasonChecker", () => {
  it("passes an attempt that finished on its own", async () => {
    const result = await check({ outcome: "finished" });
    expect(result.complete).toBe(true);
    expect(result.detail).toContain("outcome finished");
  });

  it.each([
    ["truncated", /cut off/],
    ["timeout", /ran out of time/],
    ["error", /ended with an error: provider said 500/],
    ["cancelled", /cancelled/],
    ["rate-limited", /provider refused the attempt's requests/],
  ] as const)("fails an attempt that ended %s, saying so", async (outcome, said) => {
    const result = await check({ outcome, error: "provider said 500" });
    expect(result.complete).toBe(false);
    expect(result.feedback).toMatch(said);
  });

  it("names where a truncated attempt stopped, so the retry can pick up from there", async () => {
    const result = await check({
      outcome: "truncated",
      stepFinishReasons: ["tool-calls", "length"],
      toolCalls: [
        { tool: "write", status: "completed", input: '{"filePath":"src/slugify.ts"}', output: "" },
      ],
      filesChanged: ["src/slugify.ts"],
    });
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("after it last ran write");
    expect(result.feedback).toContain("having written src/slugify.ts");
    expect(result.detail).toContain("last: tool-calls, length");
  });

  it("fails a finished attempt whose tool call was refused permission", async () => {
    const result = await check({
      toolCalls: [
        { tool: "read", status: "completed", input: "a.ts", output: "text" },
        {
          tool: "bash",
          status: "error",
          input: "rm -rf /tmp/elsewhere",
          output: "The user rejected permission to use this specific tool call.",
        },
      ],
    });
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("Permission was refused for: bash rm -rf /tmp/elsewhere");
  });

  it("fails a finished attempt whose executor reports a refused permission", async () => {
    const result = await check({ details: { permissionRejected: true } });
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("Permission was refused for: a tool call");
  });

  it("does not mistake a completed tool call that mentions permissions for a refusal", async () => {
    const result = await check({
      toolCalls: [
        {
          tool: "read",
          status: "completed",
          input: "notes.md",
          output: "The user rejected permission to use this specific tool call.",
        },
      ],
    });
    expect(result.complete).toBe(true);
  });
});
