import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createOpencodeExecutor } from "@taskledger/executor";
import {
  afterToolResult,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  scriptedOpencodeProvider,
  subTaskOf,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { builtCli } from "../test-support/cli-harness.js";
import { fileSubTask, mcpFixture } from "../test-support/mcp-fixture.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

// biome-ignore lint/suspicious/noExplicitAny: OpenAI chat bodies are read loosely
type Loose = any;

/** The tool of the calling session whose name ends with `tool` (opencode prefixes the server's name). */
function toolNamed(request: RecordedRequest, tool: string): string | undefined {
  const tools: Loose[] = (request.body as Loose)?.tools ?? [];
  return tools.map((t) => t?.function?.name as string).find((name) => name?.endsWith(tool));
}

/**
 * The calling session (it has taskledger's tools): start a run, wait for it, say how it ended.
 * The sub-tasks' sessions and the manager's calls are answered as in any run.
 */
function replies(request: RecordedRequest): ScriptedReply {
  const role = roleOf(request);
  if (role === "plan") {
    const subTask = fileSubTask("greeting", "Create greeting.txt containing hello.");
    return { text: JSON.stringify({ subTasks: [subTask] }) };
  }
  if (role === "judge") return completedJudge("Wrote it.");
  const start = toolNamed(request, "start_run");
  const wait = toolNamed(request, "wait_for_run");
  if (start && wait) {
    const messages: Loose[] = (request.body as Loose).messages ?? [];
    const results = messages.filter((m) => m.role === "tool").map((m) => textOf(m.content));
    if (results.length === 0)
      return {
        toolCalls: [
          {
            name: start,
            arguments: { request: "Create greeting.txt and check it", review: false },
          },
        ],
      };
    const last = results.at(-1) ?? "";
    const runId = /"runId":"([^"]+)"/.exec(results[0] ?? "")?.[1];
    const status = /"report":\{"runId":"[^"]+","status":"(\w+)"/.exec(last)?.[1];
    if (results.length === 1 || !status)
      return { toolCalls: [{ name: wait, arguments: { runId, timeoutSeconds: 60 } }] };
    return { text: `taskledger finished run ${runId}: ${status}` };
  }
  const id = subTaskOf(request);
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  return writeCall(`${id}.txt`, "hello\n");
}

function textOf(content: Loose): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((part) => part?.text ?? "").join("") : "";
}

const mcp = mcpFixture("taskledger-mcp-opencode-", replies);

describe.runIf(process.platform === "linux")("the real opencode as taskledger's MCP client", () => {
  it("its model starts a run and waits for it; taskledger runs the sub-task in its own session; the result comes back to the calling session", async () => {
    const { server, work } = mcp;
    const caller = createOpencodeExecutor({
      model: "scripted/test-model",
      config: {
        provider: scriptedOpencodeProvider(server),
        mcp: {
          taskledger: {
            type: "local",
            enabled: true,
            command: [process.execPath, builtCli, "mcp", ...mcp.args, "--cwd", work],
            environment: { CI: "true" },
          },
        },
      },
    });
    const result = await caller.run("Get greeting.txt written, through taskledger.", {
      subTask: {
        id: "caller",
        title: "caller",
        description: "caller",
        successCriteria: ["done"],
        dependsOn: [],
        checks: [],
      },
      attempt: 1,
      cwd: work,
      abortSignal: AbortSignal.timeout(90_000),
    });
    expect(result.toolCalls.map((call) => call.tool)).toEqual([
      "taskledger_start_run",
      "taskledger_wait_for_run",
    ]);
    expect(result.finalText).toMatch(/^taskledger finished run [\w-]+: completed$/);
    expect(await readFile(join(work, "greeting.txt"), "utf8")).toBe("hello\n");
    // Three sessions: the caller's two turns plus its answer, and the sub-task's own.
    const sessions = server.requests.filter((r) => roleOf(r) === "agent");
    expect(sessions.filter((r) => toolNamed(r, "start_run")).length).toBe(3);
    expect(sessions.filter((r) => subTaskOf(r) === "greeting").length).toBe(2);
  }, 120_000);
});
