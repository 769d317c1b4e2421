import { mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  afterToolResult,
  createModelServer,
  type ModelServer,
  type RecordedRequest,
  roleOf,
  scriptByRole,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import type { JsonReport } from "../output/json-report.js";
import { captureIo, compatibleArgs } from "../test-support/cli-harness.js";
import { compatibleProviderId } from "./runtime.js";

let server: ModelServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

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
    dir = mkdtempSync(join(tmpdir(), "taskledger-done-"));
    server = await createModelServer({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        // Every attempt writes the file, then answers "Done.": two output tokens after tools, as
        // the seed's cut-off stop had, but an answer.
        agent: (request: RecordedRequest) =>
          afterToolResult(request)
            ? { text: "Done.", finishReason: "stop", usage: { outputTokens: 2 } }
            : {
                toolCalls: [
                  { name: "write", arguments: { filePath: "hello.txt", content: "hi\n" } },
                ],
              },
        judge: {
          text: JSON.stringify({
            completed: true,
            summary: "hello.txt says hi.",
            outputData: "",
            feedback: "",
          }),
        },
      }),
    });
    const t = captureIo();
    const code = await runCli(
      [
        "run",
        "Write hello.txt saying hi, then check it",
        "--yes",
        "--json",
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        `${compatibleProviderId}/m`,
        "--cwd",
        dir,
        "--max-retries",
        "2",
      ],
      t.io,
    );
    expect(code, t.err()).toBe(0);
    const report = JSON.parse(t.out()) as JsonReport;
    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 1 });
    expect(readFileSync(join(dir, "hello.txt"), "utf8")).toBe("hi\n");
    // The judge saw the attempt and was asked once; no agent call beyond the two scripted.
    expect(server.requests.filter((r) => roleOf(r) === "judge")).toHaveLength(1);
    expect(server.requests.filter((r) => roleOf(r) === "agent")).toHaveLength(2);
  }, 120_000);
});
