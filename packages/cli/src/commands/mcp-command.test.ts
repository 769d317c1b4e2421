import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import type { TaskLedgerInput } from "@taskledger/core";
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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { connectMcp, TestMcpClient } from "../test-support/mcp-client.js";
import { fileAskedFor, fileSubTask, mcpFixture } from "../test-support/mcp-fixture.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

const secret = "sk-test-0123456789-do-not-show";

function planFor(name: string): TaskLedgerInput {
  // A model that echoes a key it saw must not get it into a result.
  const leak = name === "leak" ? ` Use ${secret}.` : "";
  return {
    subTasks: [fileSubTask(name, `Create ${name}.txt containing the word done.${leak}`)],
  };
}

/** Agent attempts by sub-task: the first attempt of `slow` takes long enough to quit during it. */
const attempts = new Map<string, number>();
let slowStarted!: () => void;
const slowCalled = new Promise<void>((resolve) => {
  slowStarted = resolve;
});

function replies(request: RecordedRequest): ScriptedReply {
  const role = roleOf(request);
  if (role === "plan") return { text: JSON.stringify(planFor(fileAskedFor(request))) };
  if (role === "judge") return completedJudge("Wrote it.");
  const id = subTaskOf(request) ?? "";
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  const attempt = (attempts.get(id) ?? 0) + 1;
  attempts.set(id, attempt);
  if (id === "slow") slowStarted();
  return {
    ...(id === "slow" && attempt === 1 ? { delayMs: 60_000 } : {}),
    ...writeCall(`${id}.txt`, "done\n", "codex"),
  };
}

// The MCP server is the subject, not the agent: its runs are on Codex.
const mcp = mcpFixture("taskledger-mcp-", replies, "codex");

async function connect(
  options: Omit<Parameters<typeof connectMcp>[0], "args" | "cwd"> & { extra?: string[] } = {},
) {
  return mcp.connect({
    args: [...mcp.args, ...(options.extra ?? [])],
    cwd: mcp.work,
    env: { TASKLEDGER_TEST_API_KEY: secret },
    ...options,
  });
}

describe.runIf(process.platform === "linux")("taskledger mcp over stdio (the SDK's client)", () => {
  // Answers come from this queue, one a review; a function sees the request and its signal.
  const answers: ((signal: AbortSignal) => Promise<ElicitResult>)[] = [];
  let reviewing: TestMcpClient;

  beforeAll(async () => {
    reviewing = await connect({
      roots: [mcp.work],
      elicit: async (_request, signal) => {
        const answer = answers.shift();
        if (!answer) throw new Error("an unexpected review");
        return answer(signal);
      },
    });
  });
  // Its process works in the same directory as the next describe's, which counts what is left.
  afterAll(() => reviewing.close());

  it("lists every tool with an input and an output schema", async () => {
    const { tools } = await reviewing.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "answer_plan_review",
      "cancel_run",
      "get_run_report",
      "get_run_status",
      "list_runs",
      "plan_request",
      "resume_run",
      "start_run",
      "wait_for_run",
    ]);
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toBeDefined();
      expect(tool.description?.length, tool.name).toBeGreaterThan(40);
    }
  });

  it("plans without running, and no result shows a key a model echoed", async () => {
    const plan = await reviewing.ok<{
      facts: unknown[];
      subTasks: { id: string; description: string }[];
    }>("plan_request", { request: "Create leak.txt and check it" });
    expect(plan.subTasks.map((s) => s.id)).toEqual(["leak"]);
    // The plan states no facts; the field is there, empty.
    expect(plan.facts).toEqual([]);
    expect(plan.subTasks[0]!.description).toContain("[redacted]");
    expect(existsSync(join(mcp.work, "leak.txt"))).toBe(false);
  });

  it("malformed calls are tool errors that say what is wrong", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["start_run", { request: 42 }, "request"],
      ["start_run", { request: "   " }, "the request is empty"],
      ["get_run_status", { runId: "../etc" }, "run id"],
      ["get_run_status", { runId: "missing" }, 'no records of run "missing"'],
      ["wait_for_run", { runId: "missing", timeoutSeconds: 0 }, "timeoutSeconds"],
      ["answer_plan_review", { runId: "missing", reviewId: "r", action: "maybe" }, "action"],
      ["get_run_report", { runId: "missing" }, "missing"],
    ];
    for (const [name, input, message] of cases) {
      const result = await reviewing.call(name, input);
      expect(result.isError, `${name} ${JSON.stringify(input)}`).toBe(true);
      expect((result.content as { text: string }[])[0]?.text).toContain(message);
    }
  });

  it("refuses a directory outside the client's roots, naming it", async () => {
    const result = await reviewing.call("start_run", {
      request: "Create out.txt and check it",
      directory: mcp.root,
    });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain(
      `The directory ${mcp.root} is outside your roots`,
    );
  });

  it("asks for the plan through elicitation: accepted, the run finishes with progress on the way", async () => {
    answers.push(async () => ({ action: "accept", content: { run: true } }));
    const started = await reviewing.ok<{ runId: string; directory: string }>("start_run", {
      request: "Create first.txt and check it",
    });
    expect(started.directory).toBe(mcp.work);
    const progress: { progress: number; message?: string }[] = [];
    const waited = await reviewing.ok<{
      outcome: string;
      report: { status: string; subTasks: { id: string; status: string }[]; applied: boolean };
    }>("wait_for_run", { runId: started.runId, timeoutSeconds: 60 }, (p) => progress.push(p));
    expect(waited.outcome, reviewing.log()).toBe("finished");
    expect(waited.report.status).toBe("completed");
    expect(waited.report.applied).toBe(true);
    expect(await readFile(join(mcp.work, "first.txt"), "utf8")).toBe("done\n");
    expect(progress.length).toBeGreaterThan(0);
    for (let i = 1; i < progress.length; i++)
      expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
    expect(progress.at(-1)?.message).toMatch(/sub-tasks done/);
    const report = await reviewing.ok<{ subTasks: { status: string }[] }>("get_run_report", {
      runId: started.runId,
    });
    expect(report.subTasks.map((s) => s.status)).toEqual(["completed"]);
  });

  it("a declined elicitation rejects the plan: nothing runs", async () => {
    answers.push(async () => ({ action: "decline" }));
    const { runId } = await reviewing.ok<{ runId: string }>("start_run", {
      request: "Create declined.txt and check it",
    });
    const waited = await reviewing.ok<{
      outcome: string;
      report: { status: string; reason: string };
    }>("wait_for_run", { runId });
    expect(waited.report.status).toBe("rejected");
    expect(waited.report.reason).toContain("declined in the client");
    expect(existsSync(join(mcp.work, "declined.txt"))).toBe(false);
  });

  it("the answer tool and the form race: the first answer wins, the form is withdrawn, a second answer is refused", async () => {
    let withdrawn!: () => void;
    const formWithdrawn = new Promise<void>((done) => {
      withdrawn = done;
    });
    answers.push(
      (signal) =>
        new Promise<ElicitResult>((_, fail) =>
          signal.addEventListener("abort", () => {
            withdrawn();
            fail(new Error("withdrawn"));
          }),
        ),
    );
    const { runId } = await reviewing.ok<{ runId: string }>("start_run", {
      request: "Create raced.txt and check it",
    });
    // While the form is open, the status shows the review too.
    type Review = { reviewId: string; subTasks: { id: string }[] };
    let review: Review | undefined;
    while (!review) {
      ({ review } = await reviewing.ok<{ review?: Review }>("get_run_status", { runId }));
      await new Promise((r) => setTimeout(r, 50));
    }
    const { reviewId } = review;
    expect(review.subTasks.map((s) => s.id)).toEqual(["raced"]);
    await reviewing.ok("answer_plan_review", {
      runId,
      reviewId,
      action: "reject",
      reason: "not now",
    });
    await formWithdrawn;
    const again = await reviewing.call("answer_plan_review", {
      runId,
      reviewId,
      action: "approve",
    });
    expect(again.isError).toBe(true);
    const { report } = await reviewing.ok<{ report: { reason: string } }>("wait_for_run", {
      runId,
    });
    expect(report.reason).toContain("not now");
  });
});

describe.runIf(process.platform === "linux")(
  "taskledger mcp with a client without elicitation or roots",
  () => {
    it("waits in awaiting-review for the answer tool, validates an edit; quitting mid-run stops the run resumably, and resume_run finishes it", async () => {
      const first = await connect({ extra: ["--max-runs", "1"] });
      const outside = await first.call("start_run", {
        request: "Create x.txt and check it",
        directory: mcp.root,
      });
      expect(JSON.stringify(outside.content)).toContain("where taskledger mcp was started");

      const { runId } = await first.ok<{ runId: string }>("start_run", {
        request: "Create planned.txt and check it",
      });
      const waited = await first.ok<{
        outcome: string;
        status: { status: string; review: { reviewId: string } };
      }>("wait_for_run", { runId });
      expect(waited).toMatchObject({
        outcome: "awaiting-review",
        status: { status: "awaiting-review" },
      });
      const busy = await first.call("start_run", { request: "Create busy.txt and check it" });
      expect(JSON.stringify(busy.content)).toContain("the most this server runs at once");

      const { reviewId } = waited.status.review;
      const bad = await first.call("answer_plan_review", {
        runId,
        reviewId,
        action: "edit",
        subTasks: [
          {
            id: "slow",
            title: "t",
            description: "d",
            successCriteria: ["c"],
            dependsOn: ["nowhere"],
          },
        ],
      });
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(bad.content)).toContain("nowhere");
      await first.ok("answer_plan_review", {
        runId,
        reviewId,
        action: "edit",
        subTasks: [
          {
            id: "slow",
            title: "Write slow.txt",
            description: "Create slow.txt containing done.",
            successCriteria: ["slow.txt exists"],
            dependsOn: [],
            checks: [{ type: "file-exists", path: "slow.txt" }],
          },
        ],
      });
      // The first attempt of `slow` hangs in its model call: the client quits during it.
      await slowCalled;
      await first.close();
      expect(first.log()).toContain(`stopping run ${runId}`);
      expect(first.log()).toContain(`resume_run "${runId}"`);
      expect(first.log()).not.toContain("SIGTERM");
      // The executor's watchdog outlives its host by design, for a moment.
      const left = await pollUntil(
        () => processesUnder(mcp.work),
        (pids) => pids.length === 0,
      );
      expect(left.map(commandLineOf)).toEqual([]);

      const second = await connect();
      const listed = await second.ok<{ runs: { runId: string; status: string }[] }>(
        "list_runs",
        {},
      );
      expect(listed.runs.find((r) => r.runId === runId)?.status).toBe("cancelled");
      const early = await second.call("get_run_report", { runId: "nope" });
      expect(early.isError).toBe(true);
      await second.ok("resume_run", { runId, review: false });
      expect((await second.ok<{ status: string }>("get_run_status", { runId })).status).toBe(
        "running",
      );
      const done = await second.ok<{ outcome: string; report: { status: string } }>(
        "wait_for_run",
        { runId, timeoutSeconds: 60 },
      );
      expect(
        done,
        `${JSON.stringify(await second.ok("get_run_status", { runId }))}\n${(
          await readFile(join(mcp.store, `${runId}.jsonl`), "utf8")
        )
          .split("\n")
          .map((l) => l.slice(0, 150))
          .join(
            "\n",
          )}\n${second.log()}\n${JSON.stringify(mcp.server.requests.map((r) => [roleOf(r), subTaskOf(r), JSON.stringify(r.body).length]))}`,
      ).toMatchObject({ outcome: "finished", report: { status: "completed" } });
      expect(await readFile(join(mcp.work, "slow.txt"), "utf8")).toBe("done\n");

      // Cancel stops a run; no result of any client showed the key.
      const { runId: cancelled } = await second.ok<{ runId: string }>("start_run", {
        request: "Create cancelled.txt and check it",
        review: false,
      });
      const stopped = await second.ok<{ status: string }>("cancel_run", { runId: cancelled });
      expect(stopped.status).toBe("cancelled");
      for (const client of mcp.clients)
        expect(JSON.stringify(client.results)).not.toContain(secret);
    }, 120_000);
  },
);
