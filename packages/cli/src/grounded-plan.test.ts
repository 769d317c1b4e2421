import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGitRepo, createModelServer, type ModelServer } from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./cli.js";
import { captureIo, compatibleArgs } from "./test-support/cli-harness.js";

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

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
    const repo = createGitRepo(mkdtempSync(join(tmpdir(), "taskledger-grounded-")), {
      "package.json": JSON.stringify({ name: "greeter", scripts: { test: "node --test" } }),
      "AGENTS.md": "# For agents\nKeep every function in its own file under src/.\n",
      "src/index.js": "export {};\n",
      "test/index.test.js": "import '../src/index.js';\n",
    });
    server = await createModelServer({ replies: [{ text: JSON.stringify(plan) }] });
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
