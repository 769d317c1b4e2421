import {
  ModelError,
  PlanValidationError,
  type RunEvent,
  type TaskLedgerInput,
} from "@taskledger/core";
import { createModel } from "@taskledger/llm";
import {
  createFakeExecutor,
  type ModelServer,
  type RecordedRequest,
  type ScriptedReply,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { testScratch } from "../test-support/cli-harness.js";
import { createManager } from "./create-manager.js";

const plan: TaskLedgerInput = {
  subTasks: [
    {
      id: "lib",
      title: "Write lib.js",
      description: "Write lib.js exporting add(a, b).",
      successCriteria: ["lib.js exports add"],
      dependsOn: [],
    },
    {
      id: "docs",
      title: "Document lib.js",
      description: "Write README.md showing add(1, 2).",
      successCriteria: ["README.md shows add"],
      dependsOn: ["lib"],
    },
  ],
};

const verdict = JSON.stringify({
  completed: true,
  summary: "Done.",
  outputData: "lib.js exports add",
  feedback: "",
});

type Phase = "plan" | "judge";

/** The manager's two kinds of call, told apart by the schema their structured output names. */
function phaseOf(request: RecordedRequest): Phase {
  const name = (request.body as { response_format?: { json_schema?: { name?: string } } })
    .response_format?.json_schema?.name;
  return name === "task_ledger" ? "plan" : "judge";
}

const faults = {
  "429": { status: 429, headers: { "retry-after": "0" } },
  "500": { status: 500 },
  timeout: { hang: true },
} satisfies Record<string, ScriptedReply>;

const scratch = testScratch("all");

/** A server that answers the first call of `phase` with `fault` (or every call, if `always`). */
function faultyServer(phase: Phase, fault: ScriptedReply, always = false) {
  let faulted = false;
  return scratch.server({
    replies: (request) => {
      const current = phaseOf(request);
      if (current === phase && (always || !faulted)) {
        faulted = true;
        return fault;
      }
      return { text: current === "plan" ? JSON.stringify(plan) : verdict };
    },
  });
}

function managerFor(server: ModelServer) {
  const model = createModel({
    provider: "openai",
    model: "gpt-test",
    baseURL: server.openaiBaseURL,
    apiKey: "sk-test-faults",
    // Long enough for an answer on a loaded machine, short enough that a hang ends the attempt.
    timeout: 2000,
    maxRetries: 2,
    backoff: { initialDelayMs: 1, maxDelayMs: 10 },
  });
  return createManager({
    cwd: process.cwd(),
    model,
    executor: createFakeExecutor({ fallback: { type: "success", text: "Done." } }),
    decompose: "always",
    maxRetries: 0,
    // The plan's and the judge's calls are the subject: no acceptance call at the end.
    acceptance: false,
  });
}

describe.concurrent("the manager's provider failing, through @taskledger/llm over HTTP", () => {
  for (const phase of ["plan", "judge"] as const) {
    for (const [name, fault] of Object.entries(faults)) {
      it(`a ${name} during ${phase === "plan" ? "planning" : "evaluation"}, then success: the run completes`, async () => {
        const server = await faultyServer(phase, fault);
        const report = await managerFor(server).run("Write lib.js and document it");
        expect(report.status).toBe("completed");
        expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
          ["lib", "completed", 1],
          ["docs", "completed", 1],
        ]);
        // The retry is on the wire: the faulted call was sent again, and nothing else was.
        const phases = server.requests.map(phaseOf);
        expect(phases).toEqual(
          phase === "plan"
            ? ["plan", "plan", "judge", "judge"]
            : ["plan", "judge", "judge", "judge"],
        );
        expect(server.unexpected).toBe(0);
      });
    }
  }

  it("an answer that is never JSON costs at most two calls per structured request: the plan", async () => {
    const server = await faultyServer("plan", { text: "Sure! First I will look around." }, true);
    const error = await managerFor(server)
      .run("Write lib.js and document it")
      .catch((e: unknown) => e);
    expect(PlanValidationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/not valid JSON/);
    expect(server.requests.map(phaseOf)).toEqual(["plan", "plan"]);
  });

  it("an answer that is never JSON costs at most two calls per structured request: the judge", async () => {
    const server = await faultyServer("judge", { text: "Looks done to me!" }, true);
    const report = await managerFor(server).run("Write lib.js and document it");
    const attempts = report.subTasks.reduce((sum, s) => sum + s.attempts, 0);
    expect(attempts).toBeGreaterThan(0);
    const judged = server.requests.map(phaseOf).filter((p) => p === "judge");
    expect(judged).toHaveLength(2 * attempts);
  });

  it("a provider that keeps answering 500 during planning: a ModelError after the retries, recorded, no crash", async () => {
    const server = await faultyServer("plan", faults["500"], true);
    const events: RunEvent[] = [];
    const run = managerFor(server).start("Write lib.js and document it", {
      onEvent: (event) => events.push(event),
    });
    const error = await run.result.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(ModelError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "model-error", provider: "openai", statusCode: 500 });
    expect((error as Error).message).toMatch(/openai answered HTTP 500/);
    // The first try and maxRetries (2) more, then it gave up.
    expect(server.requests.map(phaseOf)).toEqual(["plan", "plan", "plan"]);
    expect(events.at(-1)).toMatchObject({ type: "run-failed", error: { code: "model-error" } });
  });

  it("a provider that keeps timing out during evaluation: the sub-task fails, the evidence says why, the run reports", async () => {
    const server = await faultyServer("judge", faults.timeout, true);
    const events: RunEvent[] = [];
    const report = await managerFor(server).run("Write lib.js and document it", {
      onEvent: (event) => events.push(event),
    });
    expect(report.status).toBe("failed");
    const [lib, docs] = report.subTasks;
    expect(lib).toMatchObject({ id: "lib", status: "failed" });
    expect(lib?.reason).toMatch(/could not be judged/);
    expect(docs).toMatchObject({ id: "docs", status: "skipped" });
    const evaluated = events.find((e) => e.type === "sub-task-evaluated");
    expect(JSON.stringify(evaluated)).toMatch(/did not answer within 2000 ms/);
    // The judge's call and its two retries, each cut off by the timeout (a replan may follow).
    expect(server.requests.map(phaseOf).slice(0, 4)).toEqual(["plan", "judge", "judge", "judge"]);
  });
});
