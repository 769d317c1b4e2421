import { z } from "zod";
import { factSchema } from "../ledger/task-ledger.js";
import { usageSchema } from "../usage/usage.js";

export const runStatusSchema = z.enum(["completed", "partial", "failed", "cancelled"]);
/** `completed`: every sub-task done; `partial`: some; `failed`: none; `cancelled`: aborted. */
export type RunStatus = z.infer<typeof runStatusSchema>;

export const subTaskStatusSchema = z.enum([
  "pending",
  "running",
  "completed",
  "failed",
  "skipped",
  "cancelled",
  /** Failed, then taken out of the plan by a replan; its goal lives on in `replacedBy`. */
  "replaced",
]);
export type SubTaskStatus = z.infer<typeof subTaskStatusSchema>;

/**
 * Why a sub-task failed, as a value: `executor-unavailable` (the executor cannot run attempts: a
 * missing binary, a config or model the agent refuses), `incomplete` (retries and the ladder used
 * up), `stuck` (attempts repeated each other), `judge-unavailable` (the evaluator could not
 * answer), `run-stopping` (a budget ran out before a retry), `replan-rejected`, `replan-failed`,
 * `provider-limit` (its agent's provider refused for good: a quota, or a wait past the run's time).
 */
export const subTaskFailureSchema = z.enum([
  "executor-unavailable",
  "incomplete",
  "stuck",
  "judge-unavailable",
  "run-stopping",
  "replan-rejected",
  "replan-failed",
  "provider-limit",
]);
export type SubTaskFailure = z.infer<typeof subTaskFailureSchema>;

/** One round of parallel candidates of a sub-task, and what became of each. */
export const candidateRoundReportSchema = z.object({
  round: z.number().int(),
  reason: z.enum(["risky", "all", "ladder"]),
  /** The attempt merged; `null` when none was complete or the judge chose none: the ladder went on. */
  winner: z.number().int().nullable(),
  /** Who chose: the comparative judge, the tie rule, the only complete candidate, or none was. */
  by: z.enum(["judge", "rule", "single", "none"]),
  why: z.string(),
  candidates: z.array(
    z.object({
      attempt: z.number().int(),
      agentModel: z.string().optional(),
      commit: z.string().optional(),
      /** Where its commit is kept (`refs/taskledger/<run>/attempts/<sub-task>/<attempt>`). */
      ref: z.string().optional(),
      completed: z.boolean(),
      /** Why it was not chosen; absent for the winner. */
      lost: z.string().optional(),
      /** It was running when the manager process stopped; this attempt ran it again. */
      replacedBy: z.number().int().optional(),
      usage: usageSchema,
    }),
  ),
  /** The comparative judge's call. */
  judgeUsage: usageSchema,
  /** What the round cost beyond the winner: the other candidates and the judge. */
  extraUsage: usageSchema,
});
export type CandidateRoundReport = z.infer<typeof candidateRoundReportSchema>;

export const subTaskReportSchema = z.object({
  id: z.string(),
  title: z.string(),
  status: subTaskStatusSchema,
  /** Attempts the ladder counted: those a provider's limit ended are not among them. */
  attempts: z.number().int().nonnegative(),
  /** Attempts a provider's limit ended (absent when none): run again once it let work in. */
  rateLimited: z.number().int().positive().optional(),
  summary: z.string(),
  outputData: z.string(),
  /** Why it failed, was skipped, cancelled or replaced; `null` when it completed. */
  reason: z.string().nullable(),
  /** For a failed sub-task, why as a value (absent in logs written before it existed). */
  failure: subTaskFailureSchema.optional(),
  /** The sub-tasks a replan put in its place; `null` unless it was replaced. */
  replacedBy: z.array(z.string()).nullable(),
  /** With worktrees: the commit of its completed work (merged into the run's branch). */
  commit: z.string().nullable().optional(),
  /** With worktrees: the files its merge changed, from git. */
  filesChanged: z.array(z.string()).optional(),
  /** What it spent: its agents' sessions, their evaluations, and each attempt (absent in old logs). */
  usage: z
    .object({
      agents: usageSchema,
      evaluation: usageSchema,
      total: usageSchema,
      attempts: z.array(
        z.object({ attempt: z.number().int(), agent: usageSchema, evaluation: usageSchema }),
      ),
    })
    .optional(),
  /** Its rounds of parallel candidates (`bestOf`), when it had any. */
  candidates: z.array(candidateRoundReportSchema).optional(),
  /** What the OS sandbox refused its attempts (a path written, a host contacted), when anything. */
  refusals: z
    .array(
      z.object({
        attempt: z.number().int(),
        kind: z.enum(["write", "read", "network"]),
        target: z.string(),
      }),
    )
    .optional(),
  /**
   * With worktrees: attempts that changed files outside the run's directory; those changes were
   * left out (never merged or applied). Paths from the repository's top, at most 50 an attempt.
   */
  outsideCwd: z
    .array(
      z.object({
        attempt: z.number().int(),
        paths: z.array(z.string()),
        count: z.number().int(),
        /** Shared directory: found in the user's tree while it ran, and left there. */
        shared: z.literal(true).optional(),
      }),
    )
    .optional(),
});
export type SubTaskReport = z.infer<typeof subTaskReportSchema>;

/** The shape of `RunReport`; it changes only if a field is removed or changes meaning. */
export const runReportVersion = 1;

const slotPreparationSchema = z.object({
  slot: z.number().int(),
  reason: z.enum(["new", "inputs-changed", "reused"]),
  dependencies: z.array(z.string()),
  from: z.string().optional(),
  included: z.array(z.string()),
  includedCount: z.number().int(),
  setup: z
    .object({
      command: z.string(),
      exitCode: z.number().int(),
      durationMs: z.number(),
      output: z.string().optional(),
    })
    .optional(),
  durationMs: z.number(),
});

export const runReportSchema = z.object({
  /** `runReportVersion` when the report was made (absent in reports logged before it existed). */
  version: z.literal(runReportVersion).optional(),
  runId: z.string(),
  request: z.string(),
  status: runStatusSchema,
  /** Why the run stopped short (budget, cancellation, failures); `null` when it completed. */
  reason: z.string().nullable(),
  subTasks: z.array(subTaskReportSchema),
  /** The facts the plan rested on, the replans' added (absent when the plan had none). */
  facts: z.array(factSchema).optional(),
  /** The read-only look at the project before the plan (`explore`), when there was one. */
  explore: z
    .object({
      outcome: z.string(),
      findings: z.string(),
      refused: z.array(z.string()),
      wrote: z.array(z.string()),
      attempts: z.number().int(),
    })
    .optional(),
  /** What the planner was told of the project: its size and the commands it found. */
  project: z
    .object({
      files: z.number().int(),
      commands: z.array(
        z.object({
          kind: z.enum(["test", "typecheck", "lint"]),
          argv: z.array(z.string()),
          source: z.string(),
        }),
      ),
    })
    .optional(),
  /** Rounds of parallel candidates over the run, and what they cost beyond their winners. */
  candidates: z.object({ rounds: z.number().int(), extraUsage: usageSchema }).optional(),
  usage: z.object({
    /** Planning and evaluation calls. */
    manager: usageSchema,
    /** The agents' sessions. */
    agents: usageSchema,
    total: usageSchema,
  }),
  /** The integration gate: what it ran on merged results, whose merges it sent back, the final tip. */
  integration: z
    .object({
      mode: z.enum(["batch", "each", "end", "off"]),
      /** Check runs on merged results (a tree already checked is not run again). */
      runs: z.number().int(),
      /** Completed work whose merge broke the checks, sent back through the ladder (the last 20). */
      failures: z.array(
        z.object({
          subTaskId: z.string(),
          attempt: z.number().int(),
          /** Completed sub-tasks whose work it met. */
          with: z.array(z.string()),
          /** The failing checks and the end of their output, bounded. */
          checks: z.array(z.object({ argv: z.array(z.string()), detail: z.string() })),
        }),
      ),
      /** The run's final tip, checked before it is applied. */
      final: z
        .object({
          passed: z.boolean(),
          checks: z.array(
            z.object({ argv: z.array(z.string()), passed: z.boolean(), detail: z.string() }),
          ),
        })
        .optional(),
    })
    .optional(),
  /** The request judged as a whole once its sub-tasks were done (absent when off or not reached). */
  acceptance: z
    .object({
      /** The last verdict; `unavailable`: the judge could not answer, the checked work stands. */
      verdict: z.enum(["satisfied", "unsatisfied", "unavailable"]),
      /** Verdicts asked for. */
      rounds: z.number().int(),
      /** What the last verdict found missing. */
      missing: z.array(z.object({ what: z.string(), why: z.string() })),
      reason: z.string().optional(),
      /** Sub-tasks planned for missing work, over every round. */
      continued: z.array(z.string()),
      usage: usageSchema,
    })
    .optional(),
  /** Each model provider that refused work (issue 49): absent when none did. */
  providers: z
    .array(
      z.object({
        /** The governor's key: the agent model, `agent` for the executor's own, or the manager's model. */
        key: z.string(),
        provider: z.string(),
        /** Pauses it caused; `waitedMs` is their time, overlaps counted once. */
        waits: z.number().int().nonnegative(),
        waitedMs: z.number().nonnegative(),
        /** Attempts and manager calls its refusals ended. */
        rejected: z.number().int().nonnegative(),
        /** What it said when waiting could not help (a quota), when it did. */
        exhausted: z.string().optional(),
      }),
    )
    .optional(),
  /** Where attempts worked and, with worktrees, what became of the run's branch. */
  workspace: z
    .object({
      isolation: z.enum(["shared", "worktree"]),
      /** The run's branch (`taskledger/<run id>`), absent when shared or not made (`note` says why). */
      branch: z.string().optional(),
      /** The branch's tip. */
      commit: z.string().optional(),
      /** The combined change was applied to the working tree as uncommitted changes. */
      applied: z.boolean(),
      /** What was applied, or why not and how to take the branch; or why the run was shared. */
      note: z.string().optional(),
      /** What each slot was given (dependencies, included files, setup), in the order prepared. */
      slots: z.array(slotPreparationSchema).optional(),
    })
    .optional(),
  startedAt: z.string(),
  finishedAt: z.string(),
  durationMs: z.number().nonnegative(),
});
export type RunReport = z.infer<typeof runReportSchema>;
