import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManager, type RunEvent } from "@taskledger/core";
import { createOpencodeServerExecutor } from "@taskledger/executor";
import { createModel } from "@taskledger/llm";
import {
  createModelServer,
  type RecordedRequest,
  type ScriptedReply,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { createEvaluator } from "./create-evaluator.js";

// The real opencode (its server, a run's default) and the real OpenAI SDK (the judge) over HTTP to
// the scripted model server: the first attempt is cut off, the evaluator finds it incomplete, the
// retry finishes.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const isJudgeCall = (request: RecordedRequest) =>
  JSON.stringify(request.body).includes("progress_ledger_entry");
const text = (request: RecordedRequest) => JSON.stringify(request.body);

describe("evaluator with the real opencode", () => {
  it("marks a truncated attempt incomplete and the targeted retry completes the sub-task", async () => {
    const agent: ScriptedReply[] = [
      // Attempt 1: writes half the file, then its output runs out.
      {
        toolCalls: [{ name: "write", arguments: { filePath: "greeting.txt", content: "hello\n" } }],
      },
      { text: "Now I will add the second word to greeting", finishReason: "length" },
      // Attempt 2: finishes the file and says so.
      {
        toolCalls: [
          { name: "write", arguments: { filePath: "greeting.txt", content: "hello world\n" } },
        ],
      },
      { text: "greeting.txt now holds 'hello world'." },
    ];
    const judge: ScriptedReply[] = [
      {
        text: JSON.stringify({
          completed: false,
          summary: "greeting.txt holds only 'hello'.",
          outputData: "",
          feedback: "Rewrite greeting.txt so that it holds exactly 'hello world'.",
        }),
      },
      {
        text: JSON.stringify({
          completed: true,
          summary: "greeting.txt holds 'hello world'.",
          outputData: "greeting.txt (repository root) contains the line 'hello world'.",
          feedback: "",
        }),
      },
    ];
    const server = await createModelServer({
      replies: (request) =>
        (isJudgeCall(request) ? judge : agent).shift() ?? {
          status: 400,
          body: { error: { message: "no scripted reply left" } },
        },
    });
    cleanups.push(() => server.close());
    const cwd = await mkdtemp(join(tmpdir(), "tl-evaluator-e2e-"));
    cleanups.push(() => rm(cwd, { recursive: true, force: true }));

    // A run's default executor: one opencode server serves both attempts (one start, not two).
    const executor = createOpencodeServerExecutor({
      model: "scripted/test-model",
      config: { provider: scriptedOpencodeProvider(server) },
      timeoutMs: 60_000,
      poolSize: 1,
    });
    cleanups.push(() => executor.close());
    const model = createModel({
      provider: "openai-compatible",
      model: "judge-model",
      baseURL: server.openaiBaseURL,
      apiKey: "test-key",
      maxRetries: 0,
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      executor,
      evaluator: createEvaluator({ model }),
      cwd,
    }).run("Write greeting.txt containing hello world", {
      onEvent: (event) => events.push(event),
      plan: {
        subTasks: [
          {
            id: "greeting",
            title: "Write the greeting",
            description: "Create greeting.txt in the working directory containing: hello world",
            successCriteria: ["greeting.txt contains 'hello world'"],
            checks: [{ type: "file-matches", path: "greeting.txt", pattern: "^hello world$" }],
          },
        ],
      },
    });

    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 2 });
    expect(report.subTasks[0]?.outputData).toContain("contains the line 'hello world'");
    expect(await readFile(join(cwd, "greeting.txt"), "utf8")).toBe("hello world\n");

    const evaluated = events.filter((e) => e.type === "sub-task-evaluated");
    expect(evaluated).toHaveLength(2);
    const first = evaluated[0]!.entry;
    expect(first.completed).toBe(false);
    expect(first.evidence.filter((e) => !e.passed).map((e) => e.source)).toEqual([
      "finish-reason",
      "file-matches: greeting.txt /^hello world$/",
      "llm-judge",
    ]);
    expect(evaluated[1]!.entry.completed).toBe(true);

    // The retry's prompt reached the agent with the targeted feedback, not a generic reminder.
    const agentCalls = server.requests.filter((r) => !isJudgeCall(r));
    expect(agentCalls).toHaveLength(4);
    const retryPrompt = text(agentCalls[2]!);
    expect(retryPrompt).toContain("cut off before it finished");
    expect(retryPrompt).toContain("having written greeting.txt");
    expect(retryPrompt).toContain("exactly 'hello world'");
    // The judge saw the digest and the checks, within a bounded prompt.
    const judgeCalls = server.requests.filter(isJudgeCall);
    expect(judgeCalls).toHaveLength(2);
    expect(text(judgeCalls[0]!)).toContain("outcome: truncated");
    expect(text(judgeCalls[0]!)).toContain("[FAIL] file-matches: greeting.txt");
    expect(report.usage.manager.inputTokens).toBeGreaterThan(0);
  }, 120_000);
});
