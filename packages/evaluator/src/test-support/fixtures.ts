import type { AttemptResult, SubTask } from "@taskledger/core";
import type { CheckContext } from "../checkers/checker.js";

export function attemptResult(overrides: Partial<AttemptResult> = {}): AttemptResult {
  return {
    outcome: "finished",
    finalText: "I wrote slugify.ts and its tests; npm test passes.",
    toolCalls: [],
    stepFinishReasons: ["tool-calls", "stop"],
    filesChanged: [],
    usage: { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
    durationMs: 1234,
    ...overrides,
  };
}

export function subTask(overrides: Partial<SubTask> = {}): SubTask {
  return {
    id: "slugify",
    title: "Add a slugify helper",
    description: "Write src/slugify.ts exporting slugify(text) and a test for it.",
    successCriteria: ["src/slugify.ts exports slugify", "the test passes"],
    dependsOn: [],
    checks: [],
    ...overrides,
  };
}

export function checkContext(overrides: Partial<CheckContext> = {}): CheckContext {
  return {
    request: "Add a slugify helper, test it and document it",
    subTask: subTask(),
    attempt: 1,
    result: attemptResult(),
    cwd: process.cwd(),
    abortSignal: new AbortController().signal,
    ...overrides,
  };
}
