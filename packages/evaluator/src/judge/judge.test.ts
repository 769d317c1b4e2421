import { AbortedError, ModelError, progressJudgmentSchemaName } from "@taskledger/core";
import { createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { attemptResult, subTask } from "../test-support/fixtures.js";
import { digestAttempt } from "./attempt-digest.js";
import { judgeAttempt } from "./judge.js";

const judgment = {
  completed: true,
  summary: "Added src/slugify.ts and a passing test.",
  outputData: "slugify(text: string): string is exported from src/slugify.ts",
  feedback: "",
};

function input(signal = new AbortController().signal) {
  return {
    request: "Add a slugify helper, test it and document it",
    subTask: subTask(),
    attempt: 2,
    digest: digestAttempt(attemptResult({ finalText: "DIGEST-MARKER done" })),
    evidence: [
      { source: "finish-reason", passed: true, detail: "outcome finished" },
      { source: "command: npm test", passed: false, detail: "exited 1\nstderr:\n1 failing" },
    ],
    abortSignal: signal,
  };
}

describe("judgeAttempt", () => {
  it("makes one structured call named progress_ledger_entry with the criteria, checks and digest", async () => {
    const model = createScriptedModel({
      responses: [{ object: judgment, usage: { inputTokens: 900 } }],
    });
    const outcome = await judgeAttempt(model, input());
    expect(outcome).toMatchObject({ ok: true, judgment });
    expect(outcome.usage.inputTokens).toBe(900);
    expect(model.calls).toHaveLength(1);
    const call = model.calls[0]!;
    expect(call.output?.name).toBe(progressJudgmentSchemaName);
    expect(call.system).toContain("unreliable");
    const prompt = call.messages[0]!.content;
    expect(prompt).toContain("- src/slugify.ts exports slugify");
    expect(prompt).toContain("- [FAIL] command: npm test: exited 1");
    expect(prompt).toContain("- [pass] finish-reason");
    expect(prompt).toContain("DIGEST-MARKER done");
    expect(prompt).toContain("(attempt 2)");
  });

  it("repairs an unparseable answer once, showing the model its answer and the error", async () => {
    const model = createScriptedModel({
      responses: [{ text: "Looks done to me!" }, { object: judgment }],
    });
    const outcome = await judgeAttempt(model, input());
    expect(outcome).toMatchObject({ ok: true });
    expect(model.calls).toHaveLength(2);
    const repair = model.calls[1]!.messages;
    expect(repair.at(-2)).toEqual({ role: "assistant", content: "Looks done to me!" });
    expect(repair.at(-1)?.content).toContain("not valid JSON");
  });

  it("gives up after the repair with a reason, instead of throwing", async () => {
    const model = createScriptedModel({
      responses: [{ text: "Looks done to me!" }, { object: { completed: "yes" } }],
    });
    const outcome = await judgeAttempt(model, input());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.reason).toContain("still unusable after one repair");
    expect(outcome.reason).toContain("completed");
    expect(model.calls).toHaveLength(2);
  });

  it("reports a failing model as a reason, without a repair call", async () => {
    const model = createScriptedModel({
      responses: [
        { error: new ModelError({ message: "overloaded", provider: "scripted", statusCode: 529 }) },
      ],
    });
    const outcome = await judgeAttempt(model, input());
    expect(outcome).toMatchObject({ ok: false });
    expect(model.calls).toHaveLength(1);
    expect(!outcome.ok && outcome.reason).toContain("overloaded");
  });

  it("reports a model whose generate resolves to null as a reason naming it, not a TypeError", async () => {
    const model = {
      provider: "host",
      modelId: "broken",
      generate: async () => null as never,
    };
    const outcome = await judgeAttempt(model, input());
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.reason).toContain("host/broken: generate() resolved to null");
  });

  it("rejects with AbortedError when its signal aborts", async () => {
    const controller = new AbortController();
    const model = createScriptedModel({ responses: [{ object: judgment, delayMs: 10_000 }] });
    const pending = judgeAttempt(model, input(controller.signal));
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
  });
});
