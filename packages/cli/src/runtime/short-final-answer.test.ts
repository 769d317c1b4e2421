import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterToolResult, type RecordedRequest, roleOf, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { agentArgs, runJson, testScratch } from "../test-support/cli-harness.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

const scratch = testScratch();

const plan = {
  subTasks: [
    {
      id: "hello",
      title: "Write hello.txt",
      description: "Create hello.txt saying hi.",
      successCriteria: ["hello.txt says hi"],
      dependsOn: [],
    },
  ],
};

describe("an agent that ends with a short answer after its work (real opencode)", () => {
  it('"Done." with a normal stop after a tool call is a finished turn: one attempt, completed', async () => {
    const dir = await scratch.directory("taskledger-done-");
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        // Every attempt writes the file, then answers "Done.": two output tokens after tools, as
        // the seed's cut-off stop had, but an answer.
        agent: (request: RecordedRequest) =>
          afterToolResult(request)
            ? { text: "Done.", finishReason: "stop", usage: { outputTokens: 2 } }
            : writeCall("hello.txt", "hi\n"),
        judge: completedJudge("hello.txt says hi."),
      }),
    });
    const { code, report, err } = await runJson("Write hello.txt saying hi, then check it", [
      ...agentArgs(server.openaiBaseURL, "m"),
      "--cwd",
      dir,
      "--max-retries",
      "2",
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 1 });
    expect(readFileSync(join(dir, "hello.txt"), "utf8")).toBe("hi\n");
    // The judge saw the attempt and was asked once; no agent call beyond the two scripted.
    expect(server.requests.filter((r) => roleOf(r) === "judge")).toHaveLength(1);
    expect(server.requests.filter((r) => roleOf(r) === "agent")).toHaveLength(2);
  }, 120_000);
});
