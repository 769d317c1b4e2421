import type { TaskLedgerInput } from "@taskledger/core";
import { roleOf, scriptByRole } from "@taskledger/testing";
import pc from "picocolors";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../cli.js";
import {
  captureIo,
  codexAgentArgs,
  testScratch,
  useCodexKey,
} from "../test-support/cli-harness.js";
import { callThenAnswer, completedJudge, writeCall } from "../test-support/scripted-replies.js";
import { createModelWarningPrinter } from "./model-warnings.js";

const plan: TaskLedgerInput = {
  subTasks: [
    {
      id: "note",
      title: "Write NOTE.md",
      description: "Write NOTE.md saying hello.",
      successCriteria: ["NOTE.md exists"],
      dependsOn: [],
    },
  ],
};

const scratch = testScratch();
useCodexKey();
afterEach(() => {
  vi.restoreAllMocks();
});

describe("a manager model its SDK calls deprecated, on the command line", () => {
  it("prints one clean warning line on stderr, never the SDK's raw text", async () => {
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: completedJudge("Wrote NOTE.md."),
        agent: callThenAnswer(writeCall("NOTE.md", "hello\n", "codex"), "Wrote NOTE.md."),
      }),
    });
    const root = await scratch.directory("model-warnings-");
    // The SDK's own console.warn would land here; the CLI must not let it through.
    const consoleWarn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const t = captureIo({ env: { CI: "true", ANTHROPIC_API_KEY: "test-key" }, cwd: root });

    const code = await runCli(
      [
        "run",
        "Write NOTE.md and then check it",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
        "--base-url",
        server.anthropicBaseURL,
        ...codexAgentArgs(server.openaiBaseURL),
        "--max-retries",
        "0",
        "--yes",
      ],
      t.io,
    );

    expect({ code, err: t.err() }).toMatchObject({ code: 0 });
    // Planned and judged through the deprecated model, two calls: still one line.
    expect(server.requests.filter((r) => r.face === "anthropic").map(roleOf)).toEqual([
      "plan",
      "judge",
    ]);
    const warnings = t
      .err()
      .split("\n")
      .filter((line) => line.includes("deprecated"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^warning: model claude-sonnet-4-5 is deprecated: The model 'claude-sonnet-4-5' is deprecated and will reach end-of-life on .+\. Please migrate to a newer model\./,
    );
    expect(t.out()).not.toContain("deprecated");
    expect(consoleWarn).not.toHaveBeenCalled();
  }, 150_000);
});

describe("createModelWarningPrinter", () => {
  it("writes each warning once, as one line, through the view's aside", () => {
    let text = "";
    const asides: string[] = [];
    const print = createModelWarningPrinter(
      { write: (chunk: string) => (text += chunk) },
      pc.createColors(false),
      (write) => {
        asides.push("clear");
        write();
        asides.push("redraw");
      },
    );
    const warning = {
      provider: "anthropic",
      modelId: "old-model",
      message: "The model 'old-model' is deprecated.",
      deprecated: true,
    };
    print(warning);
    print(warning);
    print({ ...warning, message: "Something else.", deprecated: false });
    expect(text).toBe(
      "warning: model old-model is deprecated: The model 'old-model' is deprecated.\n" +
        "warning: model old-model: Something else.\n",
    );
    expect(asides).toEqual(["clear", "redraw", "clear", "redraw"]);
  });
});
