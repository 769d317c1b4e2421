import { z } from "zod";
import { usageSchema } from "./usage.js";

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

export const subTaskReportSchema = z.object({
  id: z.string(),
  title: z.string(),
  status: subTaskStatusSchema,
  attempts: z.number().int().nonnegative(),
  summary: z.string(),
  outputData: z.string(),
  /** Why it failed, was skipped, cancelled or replaced; `null` when it completed. */
  reason: z.string().nullable(),
  /** The sub-tasks a replan put in its place; `null` unless it was replaced. */
  replacedBy: z.array(z.string()).nullable(),
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
});
export type SubTaskReport = z.infer<typeof subTaskReportSchema>;

export const runReportSchema = z.object({
  runId: z.string(),
  request: z.string(),
  status: runStatusSchema,
  /** Why the run stopped short (budget, cancellation, failures); `null` when it completed. */
  reason: z.string().nullable(),
  subTasks: z.array(subTaskReportSchema),
  usage: z.object({
    /** Planning and evaluation calls. */
    manager: usageSchema,
    /** The agents' sessions. */
    agents: usageSchema,
    total: usageSchema,
  }),
  startedAt: z.string(),
  finishedAt: z.string(),
  durationMs: z.number().nonnegative(),
});
export type RunReport = z.infer<typeof runReportSchema>;
