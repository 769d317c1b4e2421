import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  afterToolResult,
  type RecordedRequest,
  type ScriptedCompletion,
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
import { bashCall, completedJudge, writeCall } from "../test-support/scripted-replies.js";

const scratch = testScratch();
useCodexKey();

// The project a new user tried: `add` in lib.js, its test, and `npm test` running node's runner.
const project = {
  "package.json": JSON.stringify({
    name: "calc",
    type: "module",
    scripts: { test: "node --test" },
  }),
  "lib.js": "export function add(a, b) {\n  return a + b;\n}\n",
  "lib.test.js":
    "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { add } from './lib.js';\ntest('add', () => assert.equal(add(2, 3), 5));\n",
};
const plan = {
  subTasks: [
    {
      id: "rename",
      title: "Rename add to sum",
      description: "Rename add to sum in lib.js and its test.",
      successCriteria: ["lib.js exports sum, not add"],
      paths: ["lib.js", "lib.test.js"],
    },
    {
      id: "calc",
      title: "Add calc.js with total",
      description: "Add calc.js exporting total(xs), built on the library, with a test.",
      successCriteria: ["calc.js exports total", "calc.test.js tests it"],
      paths: ["calc.js", "calc.test.js"],
    },
  ],
};
const calcTest =
  "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { total } from './calc.js';\ntest('total', () => assert.equal(total([1, 2, 3]), 6));\n";
const calcOnAdd =
  "import { add } from './lib.js';\nexport const total = (xs) => xs.reduce(add, 0);\n";
const calcOnSum =
  "import { sum } from './lib.js';\nexport const total = (xs) => xs.reduce(sum, 0);\n";

const body = (request: RecordedRequest) => JSON.stringify(request.body);
const writes = (files: Record<string, string>): ScriptedCompletion => ({
  toolCalls: Object.entries(files).map(
    ([path, content]) => writeCall(path, content, "codex").toolCalls![0]!,
  ),
});
/** True once the agent wrote `content` (Codex's write carries it in base64). */
const wrote = (request: RecordedRequest, content: string) =>
  body(request).includes(Buffer.from(content).toString("base64"));

describe("taskledger run: the integration gate (real Codex)", () => {
  it("sends back the part whose merge breaks `npm test`, retries it from the gated tip with the failure, and leaves the user's tree passing", async () => {
    const repo = tempRepo("taskledger-gate-", project);
    let renameJudged = false;
    const agent = (request: RecordedRequest): ScriptedCompletion => {
      const text = body(request);
      if (subTaskOf(request) === "rename") {
        return afterToolResult(request)
          ? { text: "Renamed add to sum." }
          : writes({
              "lib.js": "export function sum(a, b) {\n  return a + b;\n}\n",
              "lib.test.js": project["lib.test.js"].replaceAll("add", "sum"),
            });
      }
      // calc waits (a harmless shell step) until rename is judged, so rename lands first.
      if (!renameJudged) return bashCall("sleep 0.3", "wait a moment", "codex");
      if (text.includes("does not provide an export named") && !text.includes("Built on sum.")) {
        return afterToolResult(request) && wrote(request, calcOnSum)
          ? { text: "Built on sum." }
          : writes({ "calc.js": calcOnSum });
      }
      if (text.includes("does not provide an export named")) return { text: "Built on sum." };
      return wrote(request, calcOnAdd)
        ? { text: "Added calc.js on add." }
        : writes({ "calc.js": calcOnAdd, "calc.test.js": calcTest });
    };
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: (request: RecordedRequest) => {
          if (body(request).includes("Rename add to sum")) renameJudged = true;
          return completedJudge("Done.");
        },
        agent: (request: RecordedRequest) =>
          body(request).includes("request_acceptance")
            ? { text: JSON.stringify({ satisfied: true, missing: [] }) }
            : agent(request),
      }),
    });
    const { code, report, err } = await runJson(
      "Rename add to sum (with its test), and add calc.js with total(xs) built on the library, with a test",
      [...codexArgs(server.openaiBaseURL), "--cwd", repo],
    );
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    const calc = report.subTasks.find((s) => s.id === "calc")!;
    expect(calc.attempts).toBe(2);
    expect(report.integration).toMatchObject({
      mode: "batch",
      failures: [
        {
          subTaskId: "calc",
          attempt: 1,
          with: ["rename"],
          checks: [{ argv: ["npm", "test"] }],
        },
      ],
      final: { passed: true },
    });
    expect(report.integration?.failures[0]?.checks[0]?.detail).toContain(
      "does not provide an export named 'add'",
    );
    // The retry was told the failing test's output, and started with rename's work in place.
    const retried = server.requests.find(
      (r) => subTaskOf(r) === "calc" && body(r).includes("passed its own checks, but merged"),
    );
    expect(retried).toBeDefined();
    expect(report.workspace?.applied).toBe(true);
    // The user's tree passes its own test command.
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("import { sum }");
    expect(existsSync(join(repo, "calc.test.js"))).toBe(true);
    expect(() => execFileSync("node", ["--test"], { cwd: repo, stdio: "pipe" })).not.toThrow();
    expect(err()).toMatch(/gate|integration/i);
  }, 180_000);
});
