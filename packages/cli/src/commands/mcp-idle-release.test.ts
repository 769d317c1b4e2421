import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  afterToolResult,
  commandLineOf,
  pollUntil,
  processesUnder,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  subTaskOf,
} from "@taskledger/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { fileAskedFor, fileSubTask, mcpFixture, waitForGo } from "../test-support/mcp-fixture.js";
import { completedJudge } from "../test-support/scripted-replies.js";

/** One sub-task a request; its agent waits for `go-<sub-task>` under the root, then writes. */
function replies(request: RecordedRequest): ScriptedReply {
  const role = roleOf(request);
  if (role === "plan") {
    const name = fileAskedFor(request);
    return { text: JSON.stringify({ subTasks: [fileSubTask(name, `Create ${name}.txt.`)] }) };
  }
  if (role === "judge") return completedJudge("Wrote it.");
  const id = subTaskOf(request) ?? "unknown";
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  return waitForGo(mcp.root, id);
}

const mcp = mcpFixture("taskledger-mcp-idle-", replies);
beforeAll(async () => {
  await mkdir(join(mcp.root, "tmp"));
});

/** The `opencode serve` processes of the server under test (their TMPDIR is under the root). */
async function opencodeServers(): Promise<number[]> {
  const pids = await processesUnder(join(mcp.root, "tmp"));
  return pids.filter((pid) => /opencode.*\bserve\b/.test(commandLineOf(pid).replace(/\0/g, " ")));
}

describe.runIf(process.platform === "linux")("taskledger mcp --release-idle", () => {
  it("stops the opencode servers once no run has run for the idle time, and the next run starts new ones", async () => {
    const client = await mcp.connect({
      args: [...mcp.args, "--executor", "server", "--release-idle", "1"],
      cwd: mcp.work,
      env: { TASKLEDGER_TEST_API_KEY: "sk-idle-release-test", TMPDIR: join(mcp.root, "tmp") },
    });
    const pools: number[][] = [];
    for (const name of ["first", "second"]) {
      const { runId } = await client.ok<{ runId: string }>("start_run", {
        request: `Create ${name}.txt and check it`,
        review: false,
      });
      // Its agent waits in a tool call: the pool's servers run now.
      await pollUntil(
        () => client.ok<{ running: { activity: string }[] }>("get_run_status", { runId }),
        (s) => s.running.some((r) => r.activity !== ""),
      );
      const during = await opencodeServers();
      expect(during.length, client.log()).toBeGreaterThan(0);
      pools.push(during);
      await writeFile(join(mcp.root, `go-${name}`), "");
      const done = await client.ok<{ outcome: string; report: { status: string } }>(
        "wait_for_run",
        { runId, timeoutSeconds: 60 },
      );
      expect(done, client.log()).toMatchObject({
        outcome: "finished",
        report: { status: "completed" },
      });
      const released = await pollUntil(
        async () => client.log().split("stopped the idle agent servers").length - 1,
        (count) => count >= (name === "first" ? 1 : 2),
      );
      expect(released, client.log()).toBe(name === "first" ? 1 : 2);
      const after = await pollUntil(opencodeServers, (pids) => pids.length === 0);
      expect(after.map(commandLineOf)).toEqual([]);
    }
    // The second run's servers were new ones: none of the first run's is among them.
    expect(pools[1]!.filter((pid) => pools[0]!.includes(pid))).toEqual([]);
  }, 120_000);
});
