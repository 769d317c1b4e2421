import { z } from "zod";

export const subTaskIdSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "ids are letters, digits, '-', '_' or '.'");

// Every field is required on the wire (nullable or defaulted instead of optional) so the one
// definition is accepted by OpenAI's strict structured outputs as well as by the other providers.
export const commandCheckSchema = z.object({
  type: z.literal("command"),
  /** Program and arguments, run without a shell in the sub-task's directory; must exit 0. */
  argv: z.array(z.string().min(1)).min(1).max(64),
  timeoutMs: z.number().int().positive().max(3_600_000).nullable().default(null),
});

export const fileExistsCheckSchema = z.object({
  type: z.literal("file-exists"),
  path: z.string().min(1).max(1024),
});

export const fileMatchesCheckSchema = z.object({
  type: z.literal("file-matches"),
  path: z.string().min(1).max(1024),
  /** A JavaScript regular expression the file's text must match. */
  pattern: z.string().min(1).max(1024),
});

/** Deterministic evidence a sub-task declares for itself; the evaluator runs them. */
export const checkSchema = z.discriminatedUnion("type", [
  commandCheckSchema,
  fileExistsCheckSchema,
  fileMatchesCheckSchema,
]);
export type Check = z.infer<typeof checkSchema>;
/** A check as a host writes it: what `Check` defaults (a command's `timeoutMs`) may be left out. */
export type CheckInput = z.input<typeof checkSchema>;

export const subTaskSchema = z.object({
  id: subTaskIdSchema,
  title: z.string().min(1).max(200),
  description: z.string().min(1).max(8000),
  successCriteria: z.array(z.string().min(1).max(1000)).min(1).max(20),
  dependsOn: z.array(subTaskIdSchema).max(50).default([]),
  checks: z.array(checkSchema).max(20).default([]),
  /**
   * The paths (globs, from the run's directory) the sub-task expects to change: two whose paths
   * overlap never run at once.
   */
  paths: z.array(z.string().min(1).max(300)).max(50).default([]),
  /** False: the project's own test and typecheck commands are not this sub-task's checks. */
  projectChecks: z.boolean().default(true),
  /**
   * True: the planner expects the sub-task to be hard to get right the first time; with `bestOf`
   * above 1 it gets parallel candidates from its first attempt.
   */
  risky: z.boolean().default(false),
});

type ParsedSubTask = z.infer<typeof subTaskSchema>;
/**
 * One node of the Task Ledger: self-contained work for one fresh agent session. `paths`,
 * `projectChecks` and `risky` are always there once parsed; a host's own object may leave them out.
 */
export type SubTask = Omit<ParsedSubTask, "paths" | "projectChecks" | "risky"> &
  Partial<Pick<ParsedSubTask, "paths" | "projectChecks" | "risky">>;
/** A sub-task as a host or a model may write it: `dependsOn` and `checks` may be left out. */
export type SubTaskInput = z.input<typeof subTaskSchema>;
