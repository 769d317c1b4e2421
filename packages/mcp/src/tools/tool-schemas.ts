import { checkSchema, factSchema } from "@taskledger/core";
import { z } from "zod";

/** How much text any one field of a result carries, so no result outgrows a model's context. */
export const limits = {
  request: 2000,
  short: 200,
  summary: 1000,
  output: 2000,
  description: 1000,
  subTasks: 100,
  files: 50,
  runs: 50,
  maxRequestChars: 100_000,
} as const;

const runId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, "a run id as start_run or list_runs returned it")
  .describe("The run's id, as start_run or list_runs returned it.");

const directory = z
  .string()
  .min(1)
  .max(4096)
  .optional()
  .describe(
    "Directory the agents work in; must be inside one of your roots. Default: your first root.",
  );

const request = z
  .string()
  .trim()
  .min(1, "the request is empty")
  .max(limits.maxRequestChars)
  .describe("What to get done, in full: the whole task, not just its first step.");

export const runStatusValues = [
  "planning",
  "awaiting-review",
  "running",
  "stopped",
  "completed",
  "partial",
  "failed",
  "cancelled",
  // Its plan was rejected in review: nothing ran, and there is nothing to resume.
  "rejected",
] as const;

const usage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().optional().describe("US dollars so far; absent when a model has no price."),
});

const plannedSubTask = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string(),
  successCriteria: z.array(z.string()),
  dependsOn: z.array(z.string()),
});

const review = z.object({
  reviewId: z.string().describe("Pass it to answer_plan_review."),
  kind: z.enum(["plan", "replan"]),
  subTasks: z.array(plannedSubTask).describe("The plan that would run if approved."),
  replaced: z.array(z.string()).describe("For a replan: the sub-tasks it replaces."),
  reason: z.string().optional(),
});

export const runStatusSchema = z.object({
  runId: z.string(),
  status: z.enum(runStatusValues),
  request: z.string(),
  directory: z.string().optional(),
  done: z.number().describe("Sub-tasks completed."),
  total: z.number().describe("Sub-tasks in the plan."),
  subTasks: z.array(
    z.object({ id: z.string(), title: z.string(), status: z.string(), attempts: z.number() }),
  ),
  running: z.array(
    z.object({
      id: z.string(),
      attempt: z.number(),
      activity: z.string().describe("What its agent did last."),
    }),
  ),
  usage,
  review: review.optional().describe("The plan review waiting for an answer, if any."),
  reason: z.string().optional().describe("Why the plan was rejected, when it was."),
  error: z.string().optional(),
  next: z.string().describe("What to do next."),
});
export type RunStatusResult = z.infer<typeof runStatusSchema>;

export const runReportSchema = z.object({
  runId: z.string(),
  status: z.enum(["completed", "partial", "failed", "cancelled", "rejected"]),
  reason: z.string().optional(),
  request: z.string(),
  directory: z.string().optional(),
  subTasks: z.array(
    z.object({
      id: z.string(),
      title: z.string(),
      status: z.string(),
      attempts: z.number(),
      summary: z.string(),
      output: z.string().describe("What it handed to the sub-tasks after it (clipped)."),
      reason: z.string().optional(),
      filesChanged: z.array(z.string()),
    }),
  ),
  branch: z.string().optional().describe("With worktrees: the git branch holding the result."),
  applied: z
    .boolean()
    .describe("The change is in the working tree as uncommitted changes (else only on branch)."),
  note: z.string().optional(),
  integration: z
    .object({
      runs: z.number().describe("Check runs on merged work."),
      sentBack: z
        .array(
          z.object({ subTaskId: z.string(), attempt: z.number(), failed: z.array(z.string()) }),
        )
        .describe("Completed work whose merge broke the checks, sent back to be redone."),
      finalFailed: z
        .array(z.string())
        .optional()
        .describe("The commands the final result failed (then it was not applied)."),
    })
    .optional()
    .describe("The integration gate: the project's checks run on merged work before it landed."),
  acceptance: z
    .object({
      verdict: z.enum(["satisfied", "unsatisfied", "unavailable"]),
      missing: z.array(z.string()).describe("What the request asks for that the work does not do."),
    })
    .optional()
    .describe("The request judged as a whole once every sub-task was done."),
  usage,
  durationMs: z.number(),
});
export type RunReportResult = z.infer<typeof runReportSchema>;

export const planInput = { request, directory };
export const planOutput = z.object({
  facts: z.array(factSchema).describe("The facts the plan rests on, each of one kind."),
  subTasks: z.array(plannedSubTask),
  usage,
  next: z.string(),
});

export const startInput = {
  request,
  directory,
  review: z
    .boolean()
    .default(true)
    .describe(
      "Ask for approval of the plan before anything runs (false: run it as planned). Default true.",
    ),
};
export const startOutput = z.object({
  runId: z.string(),
  status: z.enum(runStatusValues),
  directory: z.string(),
  next: z.string(),
});

export const runIdInput = { runId };

export const waitInput = {
  runId,
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(3600)
    .optional()
    .describe("Longest wait before returning the status (capped by the server; default 45)."),
};
export const waitOutput = z.object({
  outcome: z
    .enum(["finished", "awaiting-review", "stopped", "timed-out"])
    .describe("Why the wait ended."),
  status: runStatusSchema,
  report: runReportSchema.optional().describe("The report, when the run finished."),
});

export const answerInput = {
  runId,
  reviewId: z.string().min(1).max(200).describe("The review's id from the run's status."),
  action: z
    .enum(["approve", "edit", "reject"])
    .describe("approve: run the plan; edit: run `subTasks` instead; reject: stop the run."),
  subTasks: z
    .array(
      z.object({
        id: z.string(),
        title: z.string(),
        description: z.string(),
        successCriteria: z.array(z.string()),
        dependsOn: z.array(z.string()),
        checks: z.array(checkSchema).optional(),
      }),
    )
    .max(limits.subTasks)
    .optional()
    .describe(
      "With edit: the whole plan to run (id, title, description, successCriteria, dependsOn).",
    ),
  reason: z.string().max(limits.summary).optional().describe("With reject: why."),
};
export const answerOutput = z.object({
  runId: z.string(),
  action: z.enum(["approve", "edit", "reject"]),
  next: z.string(),
});

export const cancelOutput = z.object({
  runId: z.string(),
  status: z.enum(runStatusValues),
  next: z.string(),
});

export const listInput = {
  limit: z.number().int().min(1).max(limits.runs).default(10).describe("Newest runs first."),
};
export const listOutput = z.object({
  runs: z.array(
    z.object({
      runId: z.string(),
      status: z.enum(runStatusValues),
      request: z.string(),
      directory: z.string().optional(),
      done: z.number(),
      total: z.number(),
      startedAt: z.string().optional(),
    }),
  ),
  store: z.string().describe("Where the runs' logs are kept."),
});

export const resumeOutput = z.object({
  runId: z.string(),
  status: z.enum(runStatusValues),
  done: z.number(),
  total: z.number(),
  next: z.string(),
});
