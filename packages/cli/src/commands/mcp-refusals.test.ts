import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import {
  afterToolResult,
  pollUntil,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  subTaskOf,
} from "@taskledger/testing";
import { beforeAll, describe, expect, it } from "vitest";
import type { TestMcpClient } from "../test-support/mcp-client.js";
import { fileAskedFor, fileSubTask, mcpFixture, waitForGo } from "../test-support/mcp-fixture.js";
import { completedJudge } from "../test-support/scripted-replies.js";

const secret = "sk-test-refusals-0123456789";

/** The agent's one call waits for `go-<sub-task>` under the test's root, then writes its file. */
function replies(request: RecordedRequest): ScriptedReply {
  const role = roleOf(request);
  if (role === "plan") {
    const name = fileAskedFor(request);
    const subTask = fileSubTask(name, `Create ${name}.txt containing done.`);
    return { text: JSON.stringify({ subTasks: [subTask] }) };
  }
  if (role === "judge") return completedJudge("Wrote it.");
  const id = subTaskOf(request) ?? "unknown";
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  return waitForGo(mcp.root, id, "codex");
}

// The refusals and reviews are the subject, not the agent: Codex, one native binary, which tells
// a call as it starts as opencode's server does.
const mcp = mcpFixture("taskledger-mcp-refusals-", replies, "codex");

async function connect(
  options: { elicit?: (request: ElicitRequest) => Promise<ElicitResult> } = {},
) {
  return mcp.connect({
    args: mcp.args,
    cwd: mcp.work,
    env: { TASKLEDGER_TEST_API_KEY: secret },
    ...(options.elicit ? { elicit: options.elicit } : {}),
  });
}

/** A tool error's text. */
async function refusal(client: TestMcpClient, name: string, input: Record<string, unknown>) {
  const result = await client.call(name, input);
  expect(result.isError, `${name} ${JSON.stringify(input)}: ${JSON.stringify(result)}`).toBe(true);
  return (result.content as { text: string }[])[0]!.text;
}

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
        activity: expect.stringMatching(/^bash while \[ ! -f /),
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
    await writeFile(join(mcp.root, "go-hold"), "");
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
    expect(existsSync(join(mcp.work, "never.txt"))).toBe(false);
  });
});
