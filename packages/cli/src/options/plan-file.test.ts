import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { agentArgs, captureIo, testScratch } from "../test-support/cli-harness.js";

const scratch = testScratch();

const step = (id: string, dependsOn: string[] = []) => ({
  id,
  title: `Write ${id}.txt`,
  description: `Write ${id}.txt`,
  successCriteria: [`${id}.txt exists`],
  dependsOn,
  checks: [{ type: "file-exists", path: `${id}.txt` }],
});

/** A directory with `plan.json` holding `plan` (or the text given). */
function planIn(plan: unknown): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "taskledger-plan-file-"));
  const file = join(dir, "plan.json");
  writeFileSync(file, typeof plan === "string" ? plan : JSON.stringify(plan));
  return { dir, file };
}

const runArgs = (baseURL: string, dir: string, file: string) => [
  "run",
  "--plan",
  file,
  "--yes",
  "--json",
  "--isolation",
  "shared",
  "--cwd",
  dir,
  ...agentArgs(baseURL),
];

// Running a given plan (no planning call) is checked end to end in queue-run.test.ts.
describe("taskledger run --plan FILE", () => {
  it("refuses a plan that is invalid with the errors a generated one gets, and a file that is not JSON", async () => {
    const server = await scratch.server({ replies: [] });
    const cyclic = planIn({ subTasks: [step("a", ["b"]), step("b", ["a"])] });
    const t = captureIo();
    expect(await runCli(runArgs(server.openaiBaseURL, cyclic.dir, cyclic.file), t.io)).toBe(1);
    expect(t.err()).toMatch(/Invalid Task Ledger:\n- .*cycle.* \[invalid-plan\]/s);

    const broken = planIn("{ not json");
    const u = captureIo();
    expect(await runCli(runArgs(server.openaiBaseURL, broken.dir, broken.file), u.io)).toBe(2);
    expect(u.err()).toContain(`--plan: ${broken.file} is not JSON`);
    expect(server.requests).toHaveLength(0);
  });
});
