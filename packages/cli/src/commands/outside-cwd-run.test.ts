import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gitIn, roleOf, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { agentArgs, runJson, testScratch } from "../test-support/cli-harness.js";
import { insidePlan, monorepoPackage } from "../test-support/monorepo-fixture.js";
import { bashCall, callThenAnswer, completedJudge } from "../test-support/scripted-replies.js";

const scratch = testScratch();

// What a script the agent runs does: its path goes up and out of the run's directory.
const command = "echo x > ../../ROOT_CONFIG.txt && echo y > inside.txt";

describe("taskledger run in a monorepo package (real opencode, real git)", () => {
  it("applies what the agent wrote in --cwd and leaves out, and names, what it wrote at the repository's top", async () => {
    const { repo, cwd } = monorepoPackage("taskledger-cli-monorepo-");
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(insidePlan) },
        judge: completedJudge("Wrote it."),
        agent: callThenAnswer(
          bashCall(command, "write"),
          "I wrote inside.txt with one shell command.",
        ),
      }),
    });
    const { code, report, err } = await runJson("Write inside.txt", [
      ...agentArgs(server.openaiBaseURL),
      "--cwd",
      cwd,
      // What git applies is the boundary here, not the OS sandbox.
      "--sandbox",
      "off",
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("y\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
    expect(gitIn(repo, "status", "--porcelain", "-uall")).toBe("?? packages/app/inside.txt");
    const [a] = report.subTasks;
    expect(a).toMatchObject({ filesChanged: ["packages/app/inside.txt"] });
    expect(a!.outsideCwd).toEqual([{ attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 1 }]);
    expect(err()).toContain("outside the run's directory, left out: ROOT_CONFIG.txt");
    // The judge was told, so feedback can say where the change went.
    const judged = server.requests.filter((r) => roleOf(r) === "judge");
    expect(JSON.stringify(judged.map((r) => r.body))).toContain("left out: 1 path(s)");
  });
});
