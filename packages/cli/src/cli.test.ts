import { createModelServer, type ModelServer } from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./cli.js";
import { demoPlan, demoRequest } from "./demo/demo-scenario.js";
import type { JsonReport } from "./output/json-report.js";
import { captureIo, compatibleArgs } from "./test-support/cli-harness.js";

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("taskledger usage errors", () => {
  it.each([
    [["run", "x", "--provider", "nope"], "--provider must be one of"],
    [["run", "x", "--concurrency", "0"], "--concurrency must be a whole number"],
    [["run", "x", "--max-sub-tasks", "0"], "--max-sub-tasks must be a whole number from 1 to 100"],
    [
      ["run", "x", "--max-sub-tasks", "101"],
      "--max-sub-tasks must be a whole number from 1 to 100",
    ],
    [
      ["plan", "x", "--max-sub-tasks", "2.5"],
      '--max-sub-tasks must be a whole number from 1 to 100; got "2.5"',
    ],
    [["run", "x", "--provider", "openai-compatible", "--model", "m"], "--base-url is required"],
    [["run", "x", "--agent-model", "nomodel"], "--agent-model must look like provider/model"],
    [["run", "x", "--opencode-config", "/does/not/exist.json"], "cannot read"],
    [["bogus"], "unknown command"],
    [
      ["run", "x", "--isolation", "copy"],
      '--isolation must be auto, worktree or shared; got "copy"',
    ],
  ])("%j exits 2 and says why", async (argv, message) => {
    const t = captureIo();
    expect(await runCli(argv, t.io)).toBe(2);
    expect(t.err()).toContain(message);
  });

  it("a missing API key is a configuration error (exit 2) that names the variable", async () => {
    const t = captureIo({ env: { CI: "true" } });
    expect(await runCli(["run", "do it", "--provider", "anthropic"], t.io)).toBe(2);
    expect(t.err()).toContain("ANTHROPIC_API_KEY");
  });

  it("--help exits 0", async () => {
    const t = captureIo();
    expect(await runCli(["--help"], t.io)).toBe(0);
    expect(t.out()).toContain("demo");
  });
});

describe("taskledger plan", () => {
  it("prints the Task Ledger as JSON with --json, progress on stderr", async () => {
    server = await createModelServer({ replies: [{ text: JSON.stringify(demoPlan) }] });
    const t = captureIo();
    const code = await runCli(
      [
        "plan",
        "Build",
        "the",
        "greet",
        "library",
        "and",
        "test",
        "it",
        ...compatibleArgs(server.openaiBaseURL),
        "--json",
      ],
      t.io,
    );
    expect(code).toBe(0);
    const ledger = JSON.parse(t.out());
    expect(ledger.subTasks.map((s: { id: string }) => s.id)).toEqual(["library", "tests", "docs"]);
    expect(t.err()).toContain("Plan: 3 sub-tasks");
    const body = server.requests[0]?.body as { response_format: { json_schema: { name: string } } };
    expect(body.response_format.json_schema.name).toBe("task_ledger");
  });

  it("--max-sub-tasks: a plan over it is repaired once, as core repairs any invalid plan", async () => {
    const two = { subTasks: demoPlan.subTasks.slice(0, 2) };
    server = await createModelServer({
      replies: [{ text: JSON.stringify(demoPlan) }, { text: JSON.stringify(two) }],
    });
    const t = captureIo();
    const code = await runCli(["plan", demoRequest, "--max-sub-tasks", "2", ...compatible()], t.io);
    expect(code, t.err()).toBe(0);
    expect(t.out()).toContain("Plan: 2 sub-tasks (repaired once)");
    expect(wire(0)).toContain("at most 2");
    expect(wire(1)).toContain("the plan has 3 sub-tasks; the limit is 2");
  });

  it("--max-sub-tasks: a plan still over it after the repair is refused (exit 1)", async () => {
    server = await createModelServer({
      replies: [{ text: JSON.stringify(demoPlan) }, { text: JSON.stringify(demoPlan) }],
    });
    const t = captureIo();
    // An agent model the executor's config lists: its preflight passes without asking opencode.
    const agentModel = ["--agent-model", "taskledger-compatible/m"];
    const code = await runCli(
      ["run", demoRequest, "--yes", "--max-sub-tasks", "2", ...agentModel, ...compatible()],
      t.io,
    );
    expect(code, t.err() + t.out()).toBe(1);
    expect(t.err() + t.out()).toContain("the plan has 3 sub-tasks; the limit is 2");
    expect(server.requests).toHaveLength(2);
  });

  it("a provider that refuses the key ends with exit 1 and a typed message, the key nowhere", async () => {
    server = await createModelServer({ replies: [{ status: 401 }] });
    const t = captureIo({ env: { CI: "true", OPENAI_API_KEY: "sk-planted-secret-123" } });
    const code = await runCli(
      [
        "plan",
        "Build",
        "it",
        "and",
        "then",
        "test",
        "it",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        server.openaiBaseURL,
      ],
      t.io,
    );
    expect(code).toBe(1);
    expect(t.err()).toContain("401");
    expect(t.out() + t.err()).not.toContain("sk-planted-secret-123");
  });
});

describe("taskledger demo (real opencode CLI, scripted model server)", () => {
  it("plans, runs, retries the truncated attempt and reports completed as JSON", async () => {
    const t = captureIo();
    const code = await runCli(["demo", "--json"], t.io);
    const report = JSON.parse(t.out()) as JsonReport;
    expect({ code, status: report.status }).toEqual({ code: 0, status: "completed" });
    expect(report.version).toBe(1);
    expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ["library", "completed", 1],
      ["tests", "completed", 2],
      ["docs", "completed", 1],
    ]);
    expect(report.usage.agents.inputTokens).toBeGreaterThan(0);
    expect(report.usage.manager.inputTokens).toBeGreaterThan(0);
    const err = t.err();
    expect(err).toContain("retrying (attempt 2)");
    expect(err).toMatch(/── greet\.test\.js\n/);
    expect(err).toMatch(/── greet\.js\nexport function greet/);
  }, 180_000);
});

describe.concurrent.each(["claude-code", "codex"])(
  "taskledger demo --agent %s (the real agent CLI, scripted model server)",
  (agent) => {
    it("runs every sub-task on that agent in worktrees, retries the cut-off one, completes", async () => {
      const t = captureIo();
      const code = await runCli(["demo", "--json", "--agent", agent], t.io);
      const report = JSON.parse(t.out()) as JsonReport;
      expect({ code, status: report.status }).toEqual({ code: 0, status: "completed" });
      expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
        ["library", "completed", 1],
        ["tests", "completed", 2],
        ["docs", "completed", 1],
      ]);
      expect(report.usage.agents.inputTokens).toBeGreaterThan(0);
      expect(t.err()).toMatch(/── greet\.js\nexport function greet/);
    }, 120_000);
  },
);

/** Options that point the manager at the scripted server. */
function compatible(): string[] {
  return compatibleArgs(server!.openaiBaseURL);
}

/** The text of the nth model call, as sent. */
function wire(n: number): string {
  return JSON.stringify(server?.requests[n]?.body);
}
