import { createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { AbortedError } from "../errors/errors.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import { subTaskSchema } from "../ledger/sub-task.js";
import { task } from "../test-support/sub-task-fixture.js";
import { estimateTokens } from "../text/tokens.js";
import { emptyUsage } from "../usage/usage.js";
import {
  candidateChoiceSchemaName,
  candidateJudgeTokenBudget,
  chooseCandidate,
  type JudgedCandidate,
  ruleChoice,
} from "./candidate-judge.js";

const entry = (passed: number, failed = 0): ProgressEntry => ({
  completed: true,
  summary: "Wrote it.",
  outputData: "",
  feedback: "",
  evidence: [
    ...Array.from({ length: passed }, (_, i) => ({
      source: `check ${i}`,
      passed: true,
      detail: "exit 0",
    })),
    ...Array.from({ length: failed }, (_, i) => ({
      source: `extra ${i}`,
      passed: false,
      detail: "exit 1",
    })),
  ],
  usage: emptyUsage(),
});
const candidate = (
  attempt: number,
  passed: number,
  linesChanged: number,
  text = `+ line of ${attempt}`,
): JudgedCandidate => ({
  attempt,
  entry: entry(passed),
  diff: { text, linesChanged },
});
const subTask = subTaskSchema.parse(task("sum"));
const abortSignal = new AbortController().signal;

describe("the tie rule", () => {
  it("prefers the most evidence passed, then the smallest change, then the first started", () => {
    expect(ruleChoice([candidate(1, 2, 10), candidate(2, 3, 50)], "why").winner).toBe(2);
    expect(ruleChoice([candidate(1, 3, 50), candidate(2, 3, 10)], "why").winner).toBe(2);
    expect(ruleChoice([candidate(3, 3, 10), candidate(2, 3, 10)], "why").winner).toBe(2);
  });

  it("says for each loser which part of the rule decided", () => {
    const choice = ruleChoice(
      [candidate(1, 3, 10), candidate(2, 2, 10), candidate(3, 3, 40), candidate(4, 3, 10)],
      "No model to judge with.",
    );
    expect(choice).toMatchObject({ winner: 1, by: "rule", reason: "No model to judge with." });
    expect(Object.fromEntries(choice.losers)).toEqual({
      2: "Passed fewer checks (2 against 3).",
      3: "A larger change (40 lines against 10).",
      4: "Started after attempt 1, its equal.",
    });
  });
});

describe("the comparative judge", () => {
  it("is one structured call naming the winner, with a line for each loser", async () => {
    const model = createScriptedModel({
      responses: [
        {
          object: {
            winner: 3,
            reasons: "Only 3 adds for every input.",
            losers: [{ attempt: 2, why: "It special-cases 2 + 3." }],
          },
        },
      ],
    });
    const choice = await chooseCandidate({
      model,
      request: "Make sum add",
      subTask,
      candidates: [candidate(2, 1, 1), candidate(3, 1, 1), candidate(5, 1, 1)],
      abortSignal,
    });
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.output?.name).toBe(candidateChoiceSchemaName);
    expect(choice).toMatchObject({
      winner: 3,
      by: "judge",
      reason: "Only 3 adds for every input.",
    });
    expect(Object.fromEntries(choice.losers)).toEqual({
      2: "It special-cases 2 + 3.",
      5: "The judge preferred another.",
    });
    expect(choice.usage.inputTokens).toBeGreaterThan(0);
  });

  it("may name none: no winner, every candidate lost for the judge's reasons", async () => {
    const model = createScriptedModel({
      responses: [{ object: { winner: null, reasons: "Both subtract.", losers: [] } }],
    });
    const choice = await chooseCandidate({
      model,
      request: "Make sum add",
      subTask,
      candidates: [candidate(1, 1, 1), candidate(2, 1, 1)],
      abortSignal,
    });
    expect(choice.winner).toBeUndefined();
    expect([...choice.losers.values()]).toEqual(["Both subtract.", "Both subtract."]);
  });

  it("asks again once when it names a candidate it was not shown, then takes the answer", async () => {
    const model = createScriptedModel({
      responses: [
        { object: { winner: 9, reasons: "Nine.", losers: [] } },
        { object: { winner: 2, reasons: "Two.", losers: [] } },
      ],
    });
    const choice = await chooseCandidate({
      model,
      request: "r",
      subTask,
      candidates: [candidate(1, 1, 1), candidate(2, 1, 1)],
      abortSignal,
    });
    expect(model.calls).toHaveLength(2);
    expect(model.calls[1]!.messages.at(-1)!.content).toMatch(/winner 9 is not one of/);
    expect(choice).toMatchObject({ winner: 2, by: "judge" });
  });

  it("falls back to the tie rule when the judge cannot answer, and says so", async () => {
    const model = createScriptedModel({
      responses: [
        { object: { winner: 9, reasons: "Nine.", losers: [] } },
        { object: { winner: 8, reasons: "Eight.", losers: [] } },
      ],
    });
    const choice = await chooseCandidate({
      model,
      request: "r",
      subTask,
      candidates: [candidate(1, 1, 30), candidate(2, 1, 5)],
      abortSignal,
    });
    expect(choice).toMatchObject({ winner: 2, by: "rule" });
    expect(choice.reason).toMatch(/^The judge could not choose \(.*\): chosen by the tie rule\.$/);
    // What the failed calls spent still counts.
    expect(choice.usage.inputTokens).toBeGreaterThan(0);
  });

  it("chooses by the rule without a model, and a cancel is not a fallback", async () => {
    const none = await chooseCandidate({
      model: undefined,
      request: "r",
      subTask,
      candidates: [candidate(1, 1, 9), candidate(2, 1, 3)],
      abortSignal,
    });
    expect(none).toMatchObject({ winner: 2, by: "rule" });
    const cancel = new AbortController();
    cancel.abort();
    const model = createScriptedModel({
      responses: [{ object: { winner: 1, reasons: "", losers: [] } }],
    });
    await expect(
      chooseCandidate({
        model,
        request: "r",
        subTask,
        candidates: [candidate(1, 1, 1), candidate(2, 1, 1)],
        abortSignal: cancel.signal,
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);
    expect(model.calls).toHaveLength(0);
  });

  it("keeps its prompt within the budget however large the diffs, each shown in an equal share", async () => {
    for (const count of [2, 8]) {
      const model = createScriptedModel({
        responses: [{ object: { winner: 1, reasons: "One.", losers: [] } }],
      });
      const huge = (attempt: number) =>
        candidate(
          attempt,
          1,
          50_000,
          Array.from({ length: 50_000 }, (_, i) => `+ const v${i} = ${attempt};`).join("\n"),
        );
      await chooseCandidate({
        model,
        request: "r".repeat(100_000),
        subTask: { ...subTask, description: "d".repeat(100_000) },
        candidates: Array.from({ length: count }, (_, i) => huge(i + 1)),
        abortSignal,
      });
      const prompt = model.calls[0]!.messages.map((m) => m.content).join("\n");
      expect(estimateTokens(prompt)).toBeLessThan(candidateJudgeTokenBudget + 3_500);
      const shares = prompt
        .split(/^## Candidate attempt /m)
        .slice(1)
        .map((section) => estimateTokens(section));
      expect(shares).toHaveLength(count);
      // Equal shares: no candidate's section is much larger than another's.
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThan(50);
      // Both ends of each diff stay in view.
      expect(prompt).toContain(`+ const v0 = ${count};`);
      expect(prompt).toContain(`+ const v49999 = ${count};`);
    }
  });
  it("shows each long diff where it differs from the others, so the line that decides is in view", async () => {
    const model = createScriptedModel({
      responses: [{ object: { winner: 2, reasons: "Two adds.", losers: [] } }],
    });
    // 20,000 lines alike but one, in the middle, where a clip would cut.
    const solution = (attempt: number, decisive: string) =>
      candidate(
        attempt,
        1,
        20_000,
        Array.from({ length: 20_000 }, (_, i) =>
          i === 10_000 + attempt ? `+  ${decisive}` : `+  const v${i} = ${i};`,
        ).join("\n"),
      );
    await chooseCandidate({
      model,
      request: "Make sum add.",
      subTask,
      candidates: [
        solution(1, "return a - b; // one"),
        solution(2, "return a + b; // two"),
        solution(3, "return a - b; // three"),
      ],
      abortSignal,
    });
    const prompt = model.calls[0]!.messages.map((m) => m.content).join("\n");
    for (const line of ["return a - b; // one", "return a + b; // two", "return a - b; // three"])
      expect(prompt).toContain(line);
    expect(prompt).toContain(
      "lines left out: unchanged, or changed alike by every other candidate",
    );
    expect(estimateTokens(prompt)).toBeLessThan(candidateJudgeTokenBudget + 3_500);
  });
});
