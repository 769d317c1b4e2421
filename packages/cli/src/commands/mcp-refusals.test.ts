import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import {
  afterToolResult,
  createModelServer,
  killProcessesUnder,
  type ModelServer,
  pollUntil,
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
const secret = "sk-test-refusals-0123456789";

let server: ModelServer;
let root: string;
let work: string;
let args: string[];
const clients: TestMcpClient[] = [];

/** The agent's one call waits for `go-<sub-task>` under the test's root, then writes its file. */
function replies(request: RecordedRequest): ScriptedReply {
  const body = JSON.stringify(request.body);
  const role = roleOf(request);
  if (role === "plan") {
    const name = /Create (\w+)\.txt/.exec(body)?.[1] ?? "unknown";
    return {
      text: JSON.stringify({
        subTasks: [
          {
            id: name,
            title: `Write ${name}.txt`,
            description: `Create ${name}.txt containing done.`,
            successCriteria: [`${name}.txt exists`],
            dependsOn: [],
            checks: [{ type: "file-exists", path: `${name}.txt` }],
          },
        ],
      }),
    };
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

async function connect(
  options: { elicit?: (request: ElicitRequest) => Promise<ElicitResult> } = {},
) {
  const client = await connectMcp({
    args,
    cwd: work,
    env: { TASKLEDGER_TEST_API_KEY: secret },
    ...(options.elicit ? { elicit: options.elicit } : {}),
  });
  clients.push(client);
  return client;
}

/** A tool error's text. */
async function refusal(client: TestMcpClient, name: string, input: Record<string, unknown>) {
  const result = await client.call(name, input);
  expect(result.isError, `${name} ${JSON.stringify(input)}: ${JSON.stringify(result)}`).toBe(true);
  return (result.content as { text: string }[])[0]!.text;
}

beforeAll(async () => {
  expect(existsSync(bin), "run `npm run build` first").toBe(true);
  root = await mkdtemp(join(tmpdir(), "taskledger-mcp-refusals-"));
  work = join(root, "work");
  await mkdir(work);
  server = await createModelServer({ replies });
  args = [
    ...compatibleArgs(server.openaiBaseURL),
    "--agent-model",
    `${compatibleProviderId}/agent`,
    "--store",
    join(root, "store"),
  ];
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
  await killProcessesUnder(root);
  await rm(root, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux")("taskledger mcp refusals and reviews", () => {
  // The form's answers, one a review; each sees the form's request.
  const forms: ((request: ElicitRequest) => ElicitResult)[] = [];
  const shown: string[] = [];
  let here: TestMcpClient;
  let there: TestMcpClient;
  let runId: string;

  beforeAll(async () => {
    here = await connect({
      elicit: async (request) => {
        shown.push(JSON.stringify(request.params));
        const answer = forms.shift();
        if (!answer) throw new Error("an unexpected review");
        return answer(request);
      },
    });
    // A second server on the same store: another process.
    there = await connect();
  });

  it("a dismissed form leaves the review to answer_plan_review, and the form shows no key the request held", async () => {
    forms.push(() => ({ action: "cancel" }));
    ({ runId } = await here.ok<{ runId: string }>("start_run", {
      request: `Create hold.txt and check it; the service key is ${secret}.`,
    }));
    const waited = await here.ok<{ outcome: string; status: { review?: { reviewId: string } } }>(
      "wait_for_run",
      { runId, timeoutSeconds: 60 },
    );
    expect(waited.outcome).toBe("awaiting-review");
    expect(shown).toHaveLength(1);
    expect(shown[0]).toContain("[redacted]");
    expect(shown[0]).not.toContain(secret);
    // The server's log comes on stderr, a stream of its own: it may reach us after the reply.
    const said = `the review form of run ${runId} got no answer`;
    expect(
      await pollUntil(
        async () => here.log(),
        (log) => log.includes(said),
      ),
    ).toContain(said);

    const wrong = await refusal(here, "answer_plan_review", {
      runId,
      reviewId: "not-this-one",
      action: "approve",
    });
    expect(wrong).toBe(
      `Run ${runId} waits on review "${waited.status.review!.reviewId}", not "not-this-one"; get_run_status shows it. [invalid-request]`,
    );
    await here.ok("answer_plan_review", {
      runId,
      reviewId: waited.status.review!.reviewId,
      action: "approve",
    });
  });

  it("shows the tool call that runs, while it runs", async () => {
    const status = await pollUntil(
      () => here.ok<{ running: { id: string; activity: string }[] }>("get_run_status", { runId }),
      (s) => s.running.some((r) => r.activity !== ""),
    );
    // Without the call's start, the activity stays empty until the call ends (it waits for us).
    expect(status.running).toEqual([
      {
        id: "hold",
        attempt: 1,
        activity: expect.stringMatching(/^bash \{"command":"while \[ ! -f /),
      },
    ]);
  });

  it("refuses what cannot be done to a running run, here and from another process", async () => {
    expect(await refusal(here, "resume_run", { runId })).toBe(
      `Run ${runId} is already running in this server. [invalid-request]`,
    );
    expect(
      await refusal(here, "answer_plan_review", { runId, reviewId: "r", action: "approve" }),
    ).toBe(
      `Run ${runId} has no plan review waiting (it is running); a review is answered once. [invalid-request]`,
    );
    expect(await refusal(here, "get_run_report", { runId })).toContain(
      `Run ${runId} has not finished (it is running).`,
    );
    const timedOut = await here.ok<{ outcome: string; status: { status: string } }>(
      "wait_for_run",
      { runId, timeoutSeconds: 1 },
    );
    expect(timedOut).toMatchObject({ outcome: "timed-out", status: { status: "running" } });

    expect(await refusal(there, "resume_run", { runId })).toBe(
      `Run ${runId} is running in another process. [invalid-request]`,
    );
    expect(await refusal(there, "cancel_run", { runId })).toBe(
      `Run ${runId} runs in another process; cancel it there (Ctrl-C). [invalid-request]`,
    );
    expect(
      await refusal(there, "answer_plan_review", { runId, reviewId: "r", action: "approve" }),
    ).toBe(`Run ${runId} is not waiting for a review in this server. [invalid-request]`);
    expect(await refusal(there, "get_run_report", { runId })).toContain("has not finished");
    expect(await refusal(there, "resume_run", { runId: "never-was" })).toContain("[run-not-found]");
  });

  it("progress counts sub-tasks done of all and names the run; a finished run is not resumed", async () => {
    await writeFile(join(root, "go-hold"), "");
    const progress: { progress: number; total?: number; message?: string }[] = [];
    const done = await here.ok<{ outcome: string; report: { status: string } }>(
      "wait_for_run",
      { runId, timeoutSeconds: 60 },
      (p) => progress.push(p),
    );
    expect(done).toMatchObject({ outcome: "finished", report: { status: "completed" } });
    expect(progress.length).toBeGreaterThan(0);
    for (const p of progress) {
      expect(p.total).toBe(1);
      expect(p.progress).toBeLessThanOrEqual(1);
      expect(p.message).toContain(`run ${runId} `);
    }
    const again = await here.ok<{ status: string; next: string }>("resume_run", { runId });
    expect(again.status).toBe("completed");
    expect(again.next).toContain("get_run_report");
  });

  it("a rejected plan ends rejected with its reason, and nothing says to resume it", async () => {
    forms.push(() => ({ action: "accept", content: { run: false, reason: "wrong file" } }));
    const { runId: rejected } = await here.ok<{ runId: string }>("start_run", {
      request: "Create never.txt and check it",
    });
    const waited = await here.ok<{ outcome: string; report: { status: string; reason: string } }>(
      "wait_for_run",
      { runId: rejected, timeoutSeconds: 60 },
    );
    expect(waited).toMatchObject({
      outcome: "finished",
      report: { status: "rejected", reason: expect.stringContaining("wrong file") },
    });
    for (const client of [here, there]) {
      const status = await client.ok<{ status: string; reason: string; next: string }>(
        "get_run_status",
        { runId: rejected },
      );
      expect(status).toMatchObject({ status: "rejected", reason: "wrong file" });
      expect(status.next).not.toContain("resume_run");
    }
    expect(existsSync(join(work, "never.txt"))).toBe(false);
  });
});
