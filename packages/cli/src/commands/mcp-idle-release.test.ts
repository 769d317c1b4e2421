import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  afterToolResult,
  commandLineOf,
  createModelServer,
  killProcessesUnder,
  type ModelServer,
  pollUntil,
  processesUnder,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  subTaskOf,
} from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compatibleProviderId } from "../runtime/runtime.js";
import { compatibleArgs } from "../test-support/cli-harness.js";
import { connectMcp, type TestMcpClient } from "../test-support/mcp-client.js";

const bin = resolve(import.meta.dirname, "../../dist/bin.js");

let server: ModelServer;
let root: string;
let client: TestMcpClient | undefined;

/** One sub-task a request; its agent waits for `go-<sub-task>` under the root, then writes. */
function replies(request: RecordedRequest): ScriptedReply {
  const role = roleOf(request);
  if (role === "plan") {
    const name = /Create (\w+)\.txt/.exec(JSON.stringify(request.body))?.[1] ?? "unknown";
    const subTask = {
      id: name,
      title: `Write ${name}.txt`,
      description: `Create ${name}.txt.`,
      successCriteria: [`${name}.txt exists`],
      dependsOn: [],
      checks: [{ type: "file-exists", path: `${name}.txt` }],
    };
    return { text: JSON.stringify({ subTasks: [subTask] }) };
  }
  if (role === "judge")
    return {
      text: JSON.stringify({ completed: true, summary: "Wrote it.", outputData: "", feedback: "" }),
    };
  const id = subTaskOf(request) ?? "unknown";
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  const command = `while [ ! -f ${join(root, `go-${id}`)} ]; do sleep 0.1; done; echo done > ${id}.txt`;
  return { toolCalls: [{ name: "bash", arguments: { command, description: "wait then write" } }] };
}

/** The `opencode serve` processes of the server under test (their TMPDIR is under the root). */
async function opencodeServers(): Promise<number[]> {
  const pids = await processesUnder(join(root, "tmp"));
  return pids.filter((pid) => /opencode.*\bserve\b/.test(commandLineOf(pid).replace(/\0/g, " ")));
}

beforeAll(async () => {
  expect(existsSync(bin), "run `npm run build` first").toBe(true);
  root = await mkdtemp(join(tmpdir(), "taskledger-mcp-idle-"));
  await mkdir(join(root, "work"));
  await mkdir(join(root, "tmp"));
  server = await createModelServer({ replies });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await killProcessesUnder(root);
  await rm(root, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux")("taskledger mcp --release-idle", () => {
  it("stops the opencode servers once no run has run for the idle time, and the next run starts new ones", async () => {
    client = await connectMcp({
      args: [
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        `${compatibleProviderId}/agent`,
        "--store",
        join(root, "store"),
        "--executor",
        "server",
        "--release-idle",
        "1",
      ],
      cwd: join(root, "work"),
      env: { TASKLEDGER_TEST_API_KEY: "sk-idle-release-test", TMPDIR: join(root, "tmp") },
    });
    const mcp = client;
    const pools: number[][] = [];
    for (const name of ["first", "second"]) {
      const { runId } = await mcp.ok<{ runId: string }>("start_run", {
        request: `Create ${name}.txt and check it`,
        review: false,
      });
      // Its agent waits in a tool call: the pool's servers run now.
      await pollUntil(
        () => mcp.ok<{ running: { activity: string }[] }>("get_run_status", { runId }),
        (s) => s.running.some((r) => r.activity !== ""),
      );
      const during = await opencodeServers();
      expect(during.length, mcp.log()).toBeGreaterThan(0);
      pools.push(during);
      await writeFile(join(root, `go-${name}`), "");
      const done = await mcp.ok<{ outcome: string; report: { status: string } }>("wait_for_run", {
        runId,
        timeoutSeconds: 60,
      });
      expect(done, mcp.log()).toMatchObject({
        outcome: "finished",
        report: { status: "completed" },
      });
      const released = await pollUntil(
        async () => mcp.log().split("stopped the idle agent servers").length - 1,
        (count) => count >= (name === "first" ? 1 : 2),
      );
      expect(released, mcp.log()).toBe(name === "first" ? 1 : 2);
      const after = await pollUntil(opencodeServers, (pids) => pids.length === 0);
      expect(after.map(commandLineOf)).toEqual([]);
    }
    // The second run's servers were new ones: none of the first run's is among them.
    expect(pools[1]!.filter((pid) => pools[0]!.includes(pid))).toEqual([]);
  }, 120_000);
});
