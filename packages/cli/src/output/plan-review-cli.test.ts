import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ModelServer } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { createDemoReplies, demoRequest } from "../demo/demo-scenario.js";
import {
  codexArgs,
  codexEnv,
  terminal,
  testScratch,
  useCodexKey,
} from "../test-support/cli-harness.js";

const scratch = testScratch();
// The review at the terminal is the subject, not the agent: Codex, one native binary.
useCodexKey();

async function setup(): Promise<{ server: ModelServer; cwd: string; args: string[] }> {
  const server = await scratch.server({ replies: createDemoReplies("codex") });
  const cwd = await scratch.directory("taskledger-review-");
  const args = [...codexArgs(server.openaiBaseURL, "demo-agent", "demo-manager"), "--cwd", cwd];
  return { server, cwd, args };
}

describe("taskledger run asks before it runs", () => {
  it("runs the plan as edited in $EDITOR", async () => {
    const { cwd, args } = await setup();
    const editor = join(await scratch.directory("taskledger-editor-"), "edit.mjs");
    // The "person" deletes the docs step and tightens the library's criteria.
    await writeFile(
      editor,
      `import { readFileSync, writeFileSync } from "node:fs";
const file = process.argv[2];
const plan = JSON.parse(readFileSync(file, "utf8"));
plan.subTasks = plan.subTasks.filter((s) => s.id !== "docs");
plan.subTasks[0].successCriteria.push("greet returns a string");
writeFileSync(file, JSON.stringify(plan));`,
    );
    const t = terminal({
      ...codexEnv,
      EDITOR: `${JSON.stringify(process.execPath)} ${JSON.stringify(editor)}`,
    });
    const exit = runCli(["run", demoRequest, ...args], t.io);
    await t.answer("Run this plan? [Y/n/e(dit)]", "e");
    expect(await exit).toBe(0);
    expect(t.screen()).toContain("Running the edited plan: library, tests");
    expect(t.screen()).toMatch(/library\s+completed/);
    expect(t.screen()).not.toMatch(/docs\s+completed/);
    expect((await readdir(cwd)).sort()).toEqual(["greet.js", "greet.test.js"]);
  }, 120_000);

  it("runs nothing when the plan is declined, and exits 1", async () => {
    const { server, args } = await setup();
    const t = terminal({ ...codexEnv });
    const exit = runCli(["run", demoRequest, ...args], t.io);
    await t.answer("Run this plan? [Y/n/e(dit)]", "n");
    expect(await exit).toBe(1);
    expect(t.screen()).toContain("The plan was rejected: declined at the prompt");
    // Only the planning call reached the model: no agent, no judge.
    expect(server.requests).toHaveLength(1);
  }, 60_000);
});
