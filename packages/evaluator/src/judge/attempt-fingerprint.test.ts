import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { attemptResult } from "../test-support/fixtures.js";
import { fingerprintAttempt, isStuck } from "./attempt-fingerprint.js";

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), "tl-fingerprint-"));
  await writeFile(join(cwd, "a.ts"), "export const a = 1;\n");
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

const call = { tool: "edit", status: "completed", input: "a.ts", output: "ok at 12:00:01" };

describe("fingerprintAttempt and isStuck", () => {
  it("finds two attempts with the same files, text and tool calls stuck", async () => {
    const result = attemptResult({ filesChanged: ["a.ts"], toolCalls: [call] });
    const first = await fingerprintAttempt(result, cwd);
    // Tool outputs differ (timestamps), which is not progress.
    const again = attemptResult({
      filesChanged: ["a.ts"],
      toolCalls: [{ ...call, output: "ok at 12:05:09" }],
    });
    const second = await fingerprintAttempt(again, cwd);
    expect(isStuck(first, second)).toBe(true);
    expect(isStuck(undefined, second)).toBe(false);
    expect(first.files["a.ts"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("sees progress when a file's content changes, even under the same name", async () => {
    const result = attemptResult({ filesChanged: ["a.ts"], toolCalls: [call] });
    const first = await fingerprintAttempt(result, cwd);
    await writeFile(join(cwd, "a.ts"), "export const a = 2;\n");
    expect(isStuck(first, await fingerprintAttempt(result, cwd))).toBe(false);
  });

  it("sees progress in the final text, the tool calls and the outcome", async () => {
    const base = attemptResult({ toolCalls: [call] });
    const first = await fingerprintAttempt(base, cwd);
    const variants = [
      { ...base, finalText: "Something else" },
      { ...base, toolCalls: [{ ...call, input: "b.ts" }] },
      { ...base, outcome: "truncated" as const },
    ];
    for (const variant of variants) {
      expect(isStuck(first, await fingerprintAttempt(variant, cwd))).toBe(false);
    }
  });

  it("marks a reported file that does not exist as missing", async () => {
    const print = await fingerprintAttempt(attemptResult({ filesChanged: ["gone.ts"] }), cwd);
    expect(print.files["gone.ts"]).toBe("missing");
  });
});
