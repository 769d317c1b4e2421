import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type RecordedRequest, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import {
  agentArgs,
  captureIo,
  compatibleArgs,
  runJson,
  tempRepo,
  testScratch,
} from "../test-support/cli-harness.js";
import { callThenAnswer, completedJudge, writeCall } from "../test-support/scripted-replies.js";

const scratch = testScratch();

const facts = [
  { kind: "given", text: "Tests run with node --test." },
  { kind: "guess", text: "greet belongs in src/greet.js." },
];
const plan = {
  facts,
  subTasks: [
    {
      id: "greet",
      title: "Write greet",
      description: "Add greet to src/greet.js",
      successCriteria: ["greet exists"],
      paths: ["src/greet.js"],
      projectChecks: true,
    },
  ],
};

describe("taskledger plan on a project", () => {
  it("gives the planner the project's files, test script and AGENTS.md, and prints the plan's facts", async () => {
    const repo = tempRepo("taskledger-grounded-", {
      "package.json": JSON.stringify({ name: "greeter", scripts: { test: "node --test" } }),
      "AGENTS.md": "# For agents\nKeep every function in its own file under src/.\n",
      "src/index.js": "export {};\n",
      "test/index.test.js": "import '../index.js';\n",
    });
    const server = await scratch.server({ replies: [{ text: JSON.stringify(plan) }] });
    const t = captureIo();
    const code = await runCli(
      [
        "plan",
        "Add a greet function",
        ...compatibleArgs(server.openaiBaseURL),
        "--cwd",
        repo,
        "--json",
      ],
      t.io,
    );
    expect(code).toBe(0);
    const asked = JSON.stringify(server.requests[0]?.body);
    for (const expected of [
      "src/index.js",
      "test/index.test.js",
      "test: node --test",
      '[\\"npm\\",\\"test\\"]',
      "Keep every function in its own file under src/.",
    ]) {
      expect(asked).toContain(expected);
    }
    // The digest comes before the request, within its budget of about 8,000 characters.
    const body = server.requests[0]?.body as { messages: { content: string }[] } | undefined;
    const prompt = body?.messages.at(-1)?.content ?? "";
    expect(prompt.indexOf("AGENTS.md")).toBeLessThan(prompt.indexOf("Add a greet function"));
    expect(prompt.length).toBeLessThan(8500);
    const ledger = JSON.parse(t.out());
    expect(ledger.facts).toEqual(facts);
    expect(ledger.subTasks[0].paths).toEqual(["src/greet.js"]);
    expect(t.err()).toContain("guess: greet belongs in src/greet.js.");
    expect(t.err()).toContain("changes src/greet.js");
    expect(t.err()).toContain("Read the project: 4 files; its commands: npm test.");
  });
});

const exploring = (request: RecordedRequest) =>
  JSON.stringify(request.body).includes("Look around the project before a plan is made");

describe("taskledger run --explore (real opencode)", () => {
  it("looks around read-only first: its write is refused and reported, its findings reach the planner", async () => {
    const repo = tempRepo("taskledger-explore-", {
      "package.json": JSON.stringify({ name: "greeter" }),
      "AGENTS.md": "Keep every function in its own file under src/.\n",
      "src/index.js": "export {};\n",
    });
    // Looking around, the agent tries a write (refused) and reports; then the sub-task writes.
    const explorer = callThenAnswer(
      writeCall("escaped.txt", "x"),
      "Findings:\n- greet belongs in src/greet.js (AGENTS.md)",
    );
    const writer = callThenAnswer(
      writeCall("src/greet.js", "export const greet = () => 'hi';\n"),
      "I wrote src/greet.js.",
    );
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: completedJudge("Done."),
        agent: (request: RecordedRequest) => (exploring(request) ? explorer : writer)(request),
      }),
    });
    const { code, report, err } = await runJson("Add a greet function", [
      "--explore",
      ...agentArgs(server.openaiBaseURL),
      "--cwd",
      repo,
    ]);
    expect(code, err()).toBe(0);
    expect(report.explore).toMatchObject({
      outcome: "finished",
      findings: "Findings:\n- greet belongs in src/greet.js (AGENTS.md)",
      wrote: [],
    });
    expect(report.explore?.refused.join("\n")).toContain("unavailable tool 'write'");
    expect(existsSync(join(repo, "escaped.txt"))).toBe(false);
    expect(readFileSync(join(repo, "src/greet.js"), "utf8")).toContain("greet");
    const planning = server.requests.find((r) => JSON.stringify(r.body).includes("task_ledger"));
    expect(JSON.stringify(planning?.body)).toContain("greet belongs in src/greet.js");
    expect(err()).toMatch(
      /Looked around in [\d.]+m?s \(finished\): 2 line\(s\) of findings; 1 change\(s\) refused\./,
    );
    expect(report.facts).toEqual(facts);
  }, 120_000);
});
