import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  acceptanceReply,
  afterToolResult,
  type RecordedRequest,
  scriptByRole,
  subTaskOf,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import {
  codexArgs,
  runJson,
  tempRepo,
  testScratch,
  useCodexKey,
} from "../test-support/cli-harness.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

const scratch = testScratch();
useCodexKey();

const step = (id: string, file: string) => ({
  id,
  title: `Write ${file}`,
  description: `Create ${file} with one line.`,
  successCriteria: [`${file} exists`],
  paths: [file],
});
// The request asks for three files; the plan covers two of them.
const request = "Create greeting.txt, farewell.txt and a CHANGELOG.md entry for both";
const plan = { subTasks: [step("greeting", "greeting.txt"), step("farewell", "farewell.txt")] };
const continuation = {
  subTasks: [{ ...step("changelog", "CHANGELOG.md"), dependsOn: ["greeting", "farewell"] }],
};
const files: Record<string, string> = {
  greeting: "greeting.txt",
  farewell: "farewell.txt",
  changelog: "CHANGELOG.md",
};
const gap = { what: "a CHANGELOG.md entry for both files", why: "the request asks for it" };

function agent(request: RecordedRequest) {
  const file = files[subTaskOf(request) ?? ""];
  if (!file) return { text: "Nothing to do." };
  return afterToolResult(request)
    ? { text: `Wrote ${file}.` }
    : writeCall(file, `${file}\n`, "codex");
}

describe("taskledger run: the request judged as a whole (real Codex)", () => {
  it("a requirement no sub-task covered is named, planned as one more sub-task, done, and the run completes", async () => {
    const repo = tempRepo("taskledger-accept-", { "README.md": "# files\n" });
    const server = await scratch.server({
      replies: scriptByRole({
        plan: [{ text: JSON.stringify(plan) }, { text: JSON.stringify(continuation) }],
        judge: completedJudge("Done."),
        accept: [acceptanceReply([gap]), acceptanceReply()],
        agent,
      }),
    });
    const { code, report, err } = await runJson(request, [
      ...codexArgs(server.openaiBaseURL),
      "--cwd",
      repo,
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
      ["greeting", "completed"],
      ["farewell", "completed"],
      ["changelog", "completed"],
    ]);
    expect(report.acceptance).toMatchObject({
      verdict: "satisfied",
      rounds: 2,
      continued: ["changelog"],
    });
    expect(readFileSync(join(repo, "CHANGELOG.md"), "utf8")).toBe("CHANGELOG.md\n");
    expect(err()).toContain("a CHANGELOG.md entry for both files");
    expect(server.unexpected).toBe(0);
  }, 180_000);

  it("with no rounds left for missing work, the run is partial and names what is missing", async () => {
    const repo = tempRepo("taskledger-accept-partial-", { "README.md": "# files\n" });
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: completedJudge("Done."),
        accept: acceptanceReply([gap]),
        agent,
      }),
    });
    const { code, report, err } = await runJson(request, [
      ...codexArgs(server.openaiBaseURL),
      "--cwd",
      repo,
      "--acceptance-rounds",
      "0",
    ]);
    expect(code, err()).not.toBe(0);
    expect(report.status).toBe("partial");
    expect(report.reason).toContain("a CHANGELOG.md entry for both files");
    expect(report.acceptance).toMatchObject({ verdict: "unsatisfied", missing: [gap] });
    // The checked parts are still applied: only the whole falls short.
    expect(existsSync(join(repo, "greeting.txt"))).toBe(true);
    expect(existsSync(join(repo, "CHANGELOG.md"))).toBe(false);
  }, 180_000);
});
