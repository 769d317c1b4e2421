import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbortedError,
  buildSubTaskPrompt,
  createManager,
  type EvaluationInput,
  InvalidConfigError,
  isJudgeUnavailable,
  isStuckEntry,
  ModelError,
  type ProgressEntry,
  progressEntrySchema,
  type RunEvent,
} from "@taskledger/core";
import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Checker } from "./checkers/checker.js";
import { createEvaluator } from "./create-evaluator.js";
import { attemptResult, subTask } from "./test-support/fixtures.js";

const node = process.execPath;
const done = {
  completed: true,
  summary: "Added src/slugify.ts and its test.",
  outputData: "src/slugify.ts exports slugify(text: string): string",
  feedback: "",
};
const notDone = {
  completed: false,
  summary: "Wrote src/slugify.ts; no test yet.",
  outputData: "",
  feedback: "Write src/slugify.test.ts covering spaces and punctuation, then run it.",
};

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), "tl-evaluator-"));
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

function evaluation(overrides: Partial<EvaluationInput> = {}): EvaluationInput {
  return {
    runId: "run-1",
    request: "Add a slugify helper, test it and document it",
    subTask: subTask(),
    attempt: 1,
    result: attemptResult(),
    cwd,
    ...overrides,
  };
}
const signal = () => ({ abortSignal: new AbortController().signal });
const failingTest = {
  type: "command" as const,
  argv: [node, "-e", "console.error('FAIL slugify > strips punctuation'); process.exitCode = 1"],
  timeoutMs: null,
};

describe("createEvaluator", () => {
  it("completes an attempt the judge accepts when every check passes", async () => {
    await writeFile(join(cwd, "slugify.ts"), "export function slugify() {}\n");
    const model = createScriptedModel({ responses: [{ object: done }] });
    const entry = await createEvaluator({ model }).evaluate(
      evaluation({ subTask: subTask({ checks: [{ type: "file-exists", path: "slugify.ts" }] }) }),
      signal(),
    );
    expect(entry).toMatchObject({ completed: true, outputData: done.outputData, feedback: "" });
    expect(entry.evidence.map((e) => [e.source, e.passed])).toEqual([
      ["finish-reason", true],
      ["file-exists: slugify.ts", true],
      ["llm-judge", true],
    ]);
    expect(entry.usage.inputTokens).toBe(100);
    expect(() => progressEntrySchema.parse(entry)).not.toThrow();
  });

  it("lets a failing command check override a judge that says completed", async () => {
    const model = createScriptedModel({ responses: [{ object: done }] });
    const entry = await createEvaluator({ model }).evaluate(
      evaluation({ subTask: subTask({ checks: [failingTest] }) }),
      signal(),
    );
    expect(entry.completed).toBe(false);
    expect(entry.outputData).toBe("");
    expect(entry.summary).toMatch(/^Incomplete: failed command: /);
    expect(entry.feedback).toContain("must exit 0 but exited 1");
    expect(entry.feedback).toContain("FAIL slugify > strips punctuation");
    const judge = entry.evidence.find((e) => e.source === "llm-judge");
    expect(judge?.passed).toBe(true);
    // The judge saw the failing check.
    expect(model.calls[0]!.messages[0]!.content).toContain("[FAIL] command:");
  });

  it("makes an unparseable judge answer an incomplete entry with that reason, not a crash", async () => {
    const model = createScriptedModel({
      responses: [{ text: "Done!" }, { text: "I said: done." }],
    });
    const entry = await createEvaluator({ model }).evaluate(evaluation(), signal());
    expect(entry.completed).toBe(false);
    const judge = entry.evidence.find((e) => e.source === "llm-judge-unavailable");
    expect(judge).toMatchObject({ passed: false });
    expect(judge?.detail).toContain("still unusable after one repair");
    expect(entry.feedback).toContain("could not be judged (");
    // The manager does not blame the agent or the plan for it.
    expect(isJudgeUnavailable(entry)).toBe(true);
  });

  it("keeps a truncated attempt incomplete whatever the judge says, with targeted feedback", async () => {
    const model = createScriptedModel({ responses: [{ object: done }] });
    const entry = await createEvaluator({ model }).evaluate(
      evaluation({
        result: attemptResult({
          outcome: "truncated",
          stepFinishReasons: ["length"],
          filesChanged: ["src/slugify.ts"],
        }),
      }),
      signal(),
    );
    expect(entry.completed).toBe(false);
    expect(entry.feedback).toContain("cut off");
    expect(entry.feedback).toContain("having written src/slugify.ts");
  });

  it("passes on the judge's feedback when it finds the work incomplete", async () => {
    const model = createScriptedModel({ responses: [{ object: notDone }] });
    const entry = await createEvaluator({ model }).evaluate(evaluation(), signal());
    expect(entry).toMatchObject({ completed: false, feedback: notDone.feedback });
  });

  it("decides by the checks alone without a model, and runs the host's checkers", async () => {
    const seen: number[] = [];
    const docs: Checker = {
      name: "docs-mention-slugify",
      check: (context) => {
        seen.push(context.attempt);
        return { complete: false, feedback: "Mention slugify in README.md under Usage." };
      },
    };
    const evaluator = createEvaluator({ checkers: [docs] });
    const entry = await evaluator.evaluate(evaluation({ attempt: 3 }), signal());
    expect(entry.completed).toBe(false);
    expect(entry.feedback).toBe("Mention slugify in README.md under Usage.");
    expect(seen).toEqual([3]);
    const plain = await createEvaluator().evaluate(evaluation(), signal());
    expect(plain).toMatchObject({ completed: true, outputData: attemptResult().finalText });
  });

  it("skips the judge when a check failed, if asked to", async () => {
    const model = createScriptedModel();
    const entry = await createEvaluator({ model, judge: "when-checks-pass" }).evaluate(
      evaluation({ result: attemptResult({ outcome: "error", error: "ECONNRESET" }) }),
      signal(),
    );
    expect(entry.completed).toBe(false);
    expect(model.calls).toHaveLength(0);
    expect(entry.feedback).toContain("ECONNRESET");
  });

  it("skips the judge when a check failed and the attempt asks so (a round's candidate)", async () => {
    const model = createScriptedModel();
    const entry = await createEvaluator({ model }).evaluate(
      {
        ...evaluation({ result: attemptResult({ outcome: "truncated" }) }),
        judge: "when-checks-pass",
      },
      signal(),
    );
    expect(entry).toMatchObject({ completed: false, incomplete: "not-finished" });
    expect(model.calls).toHaveLength(0);
  });

  it("runs no commands and no judge for a cancelled attempt", async () => {
    const model = createScriptedModel();
    const marker = join(cwd, "ran");
    const touch = {
      type: "command" as const,
      argv: [node, "-e", `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "x")`],
      timeoutMs: null,
    };
    const entry = await createEvaluator({ model }).evaluate(
      evaluation({
        subTask: subTask({ checks: [touch] }),
        result: attemptResult({ outcome: "cancelled" }),
      }),
      signal(),
    );
    expect(entry.completed).toBe(false);
    expect(entry.evidence.map((e) => e.source)).toEqual(["finish-reason"]);
    expect(model.calls).toHaveLength(0);
    await expect(stat(marker)).rejects.toThrow();
    // The same check does run for an attempt that finished.
    await createEvaluator().evaluate(
      evaluation({ subTask: subTask({ checks: [touch] }) }),
      signal(),
    );
    expect((await stat(marker)).isFile()).toBe(true);
  });

  it("builds a retry prompt that carries what exactly to fix, not a generic reminder", async () => {
    const model = createScriptedModel({ responses: [{ object: notDone }] });
    const checked = subTask({ checks: [failingTest] });
    const entry = await createEvaluator({ model }).evaluate(
      evaluation({ subTask: checked }),
      signal(),
    );
    const prompt = buildSubTaskPrompt({
      request: "Add a slugify helper",
      subTask: checked,
      context: "",
      previous: { attempt: 1, entry },
      requestTokens: 500,
    });
    const section = prompt.slice(prompt.indexOf("## Previous attempt"));
    expect(section).toContain("attempt 1 was not complete");
    expect(section).toContain("FAIL slugify > strips punctuation");
    expect(section).toContain(notDone.feedback);
    expect(section).toMatch(/Failed checks:\n- command: .* exited 1/);
    expect(section).not.toMatch(/REMINDER|call complete_task/i);
  });

  it("marks an attempt identical to the previous one as stuck, from the fingerprint its entry kept", async () => {
    await writeFile(join(cwd, "slugify.ts"), "export function slugify() {}\n");
    // A new evaluator each time: what it compares with comes from the log, not its memory.
    const evaluate = (attempt: number, before: ProgressEntry | undefined, extra = {}) =>
      createEvaluator().evaluate(
        evaluation({
          attempt,
          result,
          ...(before
            ? { previous: { attempt: attempt - 1, fingerprint: before.fingerprint } }
            : {}),
          ...extra,
        }),
        signal(),
      );
    const result = attemptResult({ outcome: "truncated", filesChanged: ["slugify.ts"] });
    const first = await evaluate(1, undefined);
    expect(isStuckEntry(first)).toBe(false);
    expect(first.incomplete).toBe("not-finished");
    expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const second = await evaluate(2, first);
    expect(second.completed).toBe(false);
    expect(second.incomplete).toBe("stuck");
    expect(isStuckEntry(second)).toBe(true);
    expect(second.feedback).toMatch(/^The previous attempt repeated the one before it exactly/);
    // Only the attempt just before counts.
    const skipped = await createEvaluator().evaluate(
      evaluation({ attempt: 3, result, previous: { attempt: 1, fingerprint: first.fingerprint } }),
      signal(),
    );
    expect(skipped.incomplete).toBe("not-finished");
    // A change to a written file is progress.
    await writeFile(join(cwd, "slugify.ts"), "export function slugify(t) { return t; }\n");
    const third = await evaluate(3, second);
    expect(isStuckEntry(third)).toBe(false);
  });

  it("rejects with AbortedError when aborted, and refuses bad options", async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await createEvaluator()
      .evaluate(evaluation(), { abortSignal: controller.signal })
      .catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(() => createEvaluator({ digestTokens: 10 })).toThrow(InvalidConfigError);
    expect(() => createEvaluator({ commandTimeoutMs: -1 })).toThrow(InvalidConfigError);
    expect(() => createEvaluator({ checkers: [{} as Checker] })).toThrow(InvalidConfigError);
  });
});

describe("with the core manager", () => {
  it("retries a truncated attempt with targeted feedback, and completes on the judge's word", async () => {
    const model = createScriptedModel({ responses: [{ object: notDone }, { object: done }] });
    const executor = createFakeExecutor({
      script: {
        "request-1": [
          { type: "truncated", text: "Writing src/slugify.ts" },
          { type: "success", text: "Wrote src/slugify.ts and src/slugify.test.ts; tests pass." },
        ],
      },
    });
    const manager = createManager({ model, executor, evaluator: createEvaluator({ model }), cwd });
    const report = await manager.run("Add a slugify helper", {
      plan: {
        subTasks: [
          {
            id: "request-1",
            title: "Add slugify",
            description: "Write src/slugify.ts and a test.",
            successCriteria: ["src/slugify.ts exports slugify", "a test covers it"],
          },
        ],
      },
    });
    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ attempts: 2, outputData: done.outputData });
    const retryPrompt = executor.calls[1]!.prompt;
    expect(retryPrompt).toContain("cut off before it finished");
    expect(retryPrompt).toContain(notDone.feedback);
    expect(report.usage.manager.inputTokens).toBe(200);
  });
});

describe("runChecks: checks on their own, judging nothing", () => {
  it("runs each in the directory, one at a time, and says which pass and what they showed", async () => {
    await writeFile(join(cwd, "here.txt"), "x");
    const model = createScriptedModel({ responses: [] });
    const runs = await createEvaluator({ model }).runChecks(
      [
        {
          type: "command",
          argv: [node, "-e", "require('fs').statSync('here.txt')"],
          timeoutMs: null,
        },
        failingTest,
        { type: "file-exists", path: "missing.txt" },
      ],
      { cwd, abortSignal: new AbortController().signal },
    );
    expect(runs.map((r) => r.passed)).toEqual([true, false, false]);
    expect(runs[1]?.detail).toContain("FAIL slugify > strips punctuation");
    // No model call: nothing is judged.
    expect(model.calls).toHaveLength(0);
  });

  it("a judge call its provider refuses (429) waits for the Retry-After with the run's governor and is asked again: no judge-unavailable", async () => {
    const refused = new ModelError({
      message: "scripted answered HTTP 429: Rate limit reached",
      provider: "scripted",
      statusCode: 429,
      retryAfterMs: 50,
    });
    const model = createScriptedModel({ responses: [{ error: refused }, { object: done }] });
    const executor = createFakeExecutor({ fallback: { type: "success", text: "Done." } });
    const events: RunEvent[] = [];
    const report = await createManager({
      model,
      executor,
      evaluator: createEvaluator({ model }),
      cwd,
    }).run("Add a slugify helper", {
      plan: {
        subTasks: [
          {
            id: "a",
            title: "Add slugify",
            description: "Write it.",
            successCriteria: ["it exists"],
          },
        ],
      },
      onEvent: (e) => events.push(e),
    });
    expect(report.status).toBe("completed");
    expect(report.subTasks[0]).toMatchObject({ attempts: 1, outputData: done.outputData });
    expect(events.find((e) => e.type === "provider-limited")).toMatchObject({
      call: "manager",
      limit: { statusCode: 429, retryAfterMs: 50 },
    });
  });
});
