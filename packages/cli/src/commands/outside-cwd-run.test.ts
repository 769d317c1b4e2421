import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  afterToolResult,
  createGitRepo,
  createModelServer,
  gitIn,
  type ModelServer,
  roleOf,
  scriptByRole,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import type { JsonReport } from "../output/json-report.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { captureIo, compatibleArgs } from "../test-support/cli-harness.js";

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const plan = {
  subTasks: [
    {
      id: "a",
      title: "Write inside.txt",
      description: "Write inside.txt",
      successCriteria: ["inside.txt exists"],
      dependsOn: [],
    },
  ],
};

// What a script the agent runs does: its path goes up and out of the run's directory.
const command = "echo x > ../../ROOT_CONFIG.txt && echo y > inside.txt";

describe("taskledger run in a monorepo package (real opencode, real git)", () => {
  it("applies what the agent wrote in --cwd and leaves out, and names, what it wrote at the repository's top", async () => {
    const repo = createGitRepo(mkdtempSync(join(tmpdir(), "taskledger-cli-monorepo-")), {
      "package.json": "{}\n",
      "packages/app/index.js": "app\n",
    });
    const cwd = join(repo, "packages/app");
    server = await createModelServer({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: {
          text: JSON.stringify({
            completed: true,
            summary: "Wrote it.",
            outputData: "",
            feedback: "",
          }),
        },
        agent: (request) =>
          afterToolResult(request)
            ? { text: "I wrote inside.txt with one shell command." }
            : { toolCalls: [{ name: "bash", arguments: { command, description: "write" } }] },
      }),
    });
    const t = captureIo();
    const code = await runCli(
      [
        "run",
        "Write inside.txt",
        "--yes",
        "--json",
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        `${compatibleProviderId}/agent`,
        "--cwd",
        cwd,
        // What git applies is the boundary here, not the OS sandbox.
        "--sandbox",
        "off",
      ],
      t.io,
    );
    const report = JSON.parse(t.out()) as JsonReport;
    expect(code, t.err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("y\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
    expect(gitIn(repo, "status", "--porcelain", "-uall")).toBe("?? packages/app/inside.txt");
    const [a] = report.subTasks;
    expect(a).toMatchObject({ filesChanged: ["packages/app/inside.txt"] });
    expect(a!.outsideCwd).toEqual([{ attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 1 }]);
    expect(t.err()).toContain("outside the run's directory, left out: ROOT_CONFIG.txt");
    // The judge was told, so feedback can say where the change went.
    const judged = server.requests.filter((r) => roleOf(r) === "judge");
    expect(JSON.stringify(judged.map((r) => r.body))).toContain("left out: 1 path(s)");
  });
});
