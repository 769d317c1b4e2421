import { describe, expect, it } from "vitest";
import type { IncompleteReason, ProgressEntry } from "../ledger/progress-entry.js";
import type { AttemptResult } from "../ports/executor.js";
import { emptyUsage } from "../usage/usage.js";
import { decideNext, type LadderOptions } from "./decide-next.js";

const entry = (incomplete: IncompleteReason): ProgressEntry => ({
  completed: false,
  summary: "summary",
  outputData: "",
  feedback: "feedback",
  evidence: [],
  usage: emptyUsage(),
  incomplete,
});
const result = (retryable?: boolean): AttemptResult => ({
  outcome: "error",
  finalText: "",
  toolCalls: [],
  stepFinishReasons: [],
  filesChanged: [],
  usage: emptyUsage(),
  error: "spawn opencode ENOENT",
  ...(retryable === undefined ? {} : { retryable }),
  durationMs: 1,
});

/** Where the sub-task stands after the attempt being decided on. */
interface History {
  attempts: number;
  stepAttempts: number;
  agentModel?: string;
  alternatesUsed?: number;
  replans?: number;
  retryable?: boolean;
  /** Rounds of candidates the sub-task had chosen; only their number matters here. */
  rounds?: number;
  onCandidatesRung?: boolean;
}
const options = (extra: Partial<LadderOptions> = {}): LadderOptions => ({
  maxRetries: 2,
  alternateAgentModels: [],
  replan: { enabled: true, maxPerSubTask: 1, maxPerRun: 3 },
  replansInRun: 0,
  stopReason: undefined,
  ...extra,
});
const decide = (why: IncompleteReason, history: History, opts: LadderOptions) =>
  decideNext(
    {
      attempts: history.attempts,
      stepAttempts: history.stepAttempts,
      agentModel: history.agentModel,
      alternatesUsed: history.alternatesUsed ?? 0,
      replans: history.replans ?? 0,
      finished: { attempt: history.attempts, result: result(history.retryable) },
      rounds: Array.from({ length: history.rounds ?? 0 }, (_, i) => ({
        round: i + 1,
        reason: "risky" as const,
        by: "none" as const,
        why: "No candidate of 3 was complete.",
        candidates: [],
        usage: emptyUsage(),
      })),
      onCandidatesRung: history.onCandidatesRung ?? false,
    },
    entry(why),
    opts,
  );

const alternates = { alternateAgentModels: ["p/alt-1", "p/alt-2"] };
const table: [string, IncompleteReason, History, LadderOptions, string][] = [
  ["first failure retries", "not-finished", { attempts: 1, stepAttempts: 1 }, options(), "retry"],
  [
    "the last retry is still a retry",
    "checks-failed",
    { attempts: 3, stepAttempts: 3 },
    options({ maxRetries: 3 }),
    "retry",
  ],
  [
    "retries spent, no alternates: replan",
    "judged-incomplete",
    { attempts: 3, stepAttempts: 3 },
    options(),
    "replan",
  ],
  [
    "retries spent: first alternate",
    "not-finished",
    { attempts: 3, stepAttempts: 3 },
    options(alternates),
    "alternate-model:p/alt-1",
  ],
  [
    "one attempt per alternate: next one",
    "not-finished",
    { attempts: 4, stepAttempts: 1, agentModel: "p/alt-1", alternatesUsed: 1 },
    options(alternates),
    "alternate-model:p/alt-2",
  ],
  [
    "alternates spent: replan",
    "not-finished",
    { attempts: 5, stepAttempts: 1, agentModel: "p/alt-2", alternatesUsed: 2 },
    options(alternates),
    "replan",
  ],
  [
    "stuck skips the remaining retries",
    "stuck",
    { attempts: 2, stepAttempts: 2 },
    options(),
    "replan",
  ],
  [
    "stuck goes to an alternate first",
    "stuck",
    { attempts: 2, stepAttempts: 2 },
    options(alternates),
    "alternate-model:p/alt-1",
  ],
  [
    "judge unavailable is retried like any other",
    "judge-unavailable",
    { attempts: 1, stepAttempts: 1 },
    options(),
    "retry",
  ],
  [
    "judge unavailable is never escalated",
    "judge-unavailable",
    { attempts: 3, stepAttempts: 3 },
    options(alternates),
    "fail",
  ],
  [
    "executor not retryable fails at once",
    "not-finished",
    { attempts: 1, stepAttempts: 1, retryable: false },
    options(alternates),
    "fail",
  ],
  [
    "executor not retryable wins over a stop",
    "not-finished",
    { attempts: 1, stepAttempts: 1, retryable: false },
    options({ stopReason: "the run was cancelled" }),
    "fail",
  ],
  [
    "a stopping run is not retried",
    "not-finished",
    { attempts: 1, stepAttempts: 1 },
    options({ stopReason: "the token budget of 10 was reached (12 used)" }),
    "fail",
  ],
  [
    "replan off: fail",
    "not-finished",
    { attempts: 3, stepAttempts: 3 },
    options({ replan: { enabled: false, maxPerSubTask: 1, maxPerRun: 3 } }),
    "fail",
  ],
  [
    "per-sub-task replan cap reached",
    "not-finished",
    { attempts: 3, stepAttempts: 3, replans: 1 },
    options(),
    "fail",
  ],
  [
    "per-run replan cap reached",
    "not-finished",
    { attempts: 3, stepAttempts: 3 },
    options({ replansInRun: 3 }),
    "fail",
  ],
  [
    "no retries configured",
    "not-finished",
    { attempts: 1, stepAttempts: 1 },
    options({ maxRetries: 0 }),
    "replan",
  ],
  [
    "candidates rung: retries first",
    "not-finished",
    { attempts: 2, stepAttempts: 2 },
    options({ candidatesRung: true, ...alternates }),
    "retry",
  ],
  [
    "candidates rung: after the retries, before an alternate model",
    "judged-incomplete",
    { attempts: 3, stepAttempts: 3 },
    options({ candidatesRung: true, ...alternates }),
    "candidates",
  ],
  [
    "candidates rung: before a replan",
    "not-finished",
    { attempts: 3, stepAttempts: 3 },
    options({ candidatesRung: true }),
    "candidates",
  ],
  [
    "candidates rung: a stuck agent gets candidates at once",
    "stuck",
    { attempts: 2, stepAttempts: 2 },
    options({ candidatesRung: true }),
    "candidates",
  ],
  [
    "candidates rung: the round is one step, no retries of its own",
    "not-finished",
    { attempts: 6, stepAttempts: 1, rounds: 1, onCandidatesRung: true },
    options({ candidatesRung: true, ...alternates }),
    "alternate-model:p/alt-1",
  ],
  [
    "candidates rung: once per sub-task, not after a first round of its own",
    "not-finished",
    { attempts: 5, stepAttempts: 3, rounds: 1 },
    options({ candidatesRung: true }),
    "replan",
  ],
  [
    "candidates rung: never on an alternate model",
    "not-finished",
    { attempts: 4, stepAttempts: 1, agentModel: "p/alt-1", alternatesUsed: 1 },
    options({ candidatesRung: true, ...alternates }),
    "alternate-model:p/alt-2",
  ],
  [
    "candidates rung: a stopping run starts none",
    "not-finished",
    { attempts: 3, stepAttempts: 3 },
    options({ candidatesRung: true, stopReason: "the cost budget of $1 was reached ($1.2 spent)" }),
    "fail",
  ],
  [
    "interrupted attempts count in the step",
    "interrupted",
    { attempts: 2, stepAttempts: 2 },
    options({ maxRetries: 1 }),
    "replan",
  ],
];

describe("decideNext", () => {
  it.each(table)("%s", (_name, why, history, opts, expected) => {
    const decision = decide(why, history, opts);
    const got =
      decision.kind === "alternate-model" ? `${decision.kind}:${decision.model}` : decision.kind;
    expect(got).toBe(expected);
  });

  it("says why in the reason and as a code: stuck, exhausted, stopped, executor", () => {
    expect(
      decide(
        "stuck",
        { attempts: 2, stepAttempts: 2 },
        options({ replan: { enabled: false, maxPerSubTask: 0, maxPerRun: 0 } }),
      ),
    ).toEqual({
      kind: "fail",
      reason: "No progress: attempt 2 repeated the previous one. feedback",
      code: "stuck",
    });
    expect(decide("not-finished", { attempts: 3, stepAttempts: 3 }, options())).toEqual({
      kind: "replan",
      reason: "Incomplete after 3 attempt(s). feedback",
    });
    expect(
      decide(
        "not-finished",
        { attempts: 1, stepAttempts: 1 },
        options({ stopReason: "the run was cancelled" }),
      ),
    ).toEqual({
      kind: "fail",
      reason: "Incomplete after 1 attempt(s); not retried because the run was cancelled. feedback",
      code: "run-stopping",
    });
    expect(
      decide("not-finished", { attempts: 1, stepAttempts: 1, retryable: false }, options()),
    ).toEqual({
      kind: "fail",
      reason: "The executor cannot run attempts: spawn opencode ENOENT",
      code: "executor-unavailable",
    });
  });

  it("reads an entry without a typed reason (a format-1 log) from its evidence", () => {
    const legacy: ProgressEntry = {
      ...entry("not-finished"),
      incomplete: undefined,
      evidence: [{ source: "llm-judge-unavailable", passed: false, detail: "timeout" }],
    };
    const decision = decideNext(
      {
        attempts: 3,
        stepAttempts: 3,
        agentModel: undefined,
        alternatesUsed: 0,
        replans: 0,
        finished: undefined,
      },
      legacy,
      options(alternates),
    );
    expect(decision.kind).toBe("fail");
  });
});
