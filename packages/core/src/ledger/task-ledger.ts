import { z } from "zod";
import { type PlanIssue, PlanValidationError } from "../errors/errors.js";
import { type SubTask, subTaskSchema } from "./sub-task.js";

/**
 * A fact the plan rests on, of MagenticOne's four kinds: given (in the request or the project
 * digest), to look up, to derive, or an educated guess.
 */
export const factSchema = z.object({
  kind: z.enum(["given", "to-look-up", "to-derive", "guess"]),
  text: z.string().min(1).max(500),
});
export type Fact = z.infer<typeof factSchema>;

/** Facts a ledger may carry. */
export const maxFacts = 30;

/** The plan: the facts it rests on, sub-tasks and their dependencies (structured-output name `task_ledger`). */
export const taskLedgerSchema = z.object({
  facts: z.array(factSchema).max(maxFacts).default([]),
  subTasks: z.array(subTaskSchema),
});
/** A ledger; `facts` is always there once parsed, and a host's own may leave it out. */
export type TaskLedger = { facts?: Fact[]; subTasks: SubTask[] };
export type TaskLedgerInput = z.input<typeof taskLedgerSchema>;

/** The name the planning call's structured output goes by on every provider's wire. */
export const taskLedgerSchemaName = "task_ledger";

export const defaultMaxSubTasks = 20;

export interface ValidateTaskLedgerOptions {
  /** More sub-tasks than this is an error. Default 20. */
  maxSubTasks?: number;
}

/**
 * Parses and checks a Task Ledger: schema, at least one sub-task, the size limit, unique ids,
 * dependencies that exist and are not the sub-task itself, and no cycles. Every issue found is
 * reported at once, each naming the offending sub-task.
 */
export function validateTaskLedger(
  input: unknown,
  options: ValidateTaskLedgerOptions = {},
): TaskLedger {
  const maxSubTasks = options.maxSubTasks ?? defaultMaxSubTasks;
  const parsed = taskLedgerSchema.safeParse(input);
  if (!parsed.success) {
    throw new PlanValidationError(parsed.error.issues.map(schemaIssue), { cause: parsed.error });
  }
  const ledger = parsed.data;
  const issues = graphIssues(ledger.subTasks, maxSubTasks);
  if (issues.length > 0) throw new PlanValidationError(issues);
  return ledger;
}

function schemaIssue(issue: z.core.$ZodIssue): PlanIssue {
  const path = issue.path;
  const index = path[0] === "subTasks" && typeof path[1] === "number" ? path[1] : undefined;
  const where = path.length > 0 ? path.join(".") : "(root)";
  return {
    kind: "schema",
    message: `${where}: ${issue.message}${index === undefined ? "" : ` (sub-task #${index + 1})`}`,
  };
}

function graphIssues(subTasks: readonly SubTask[], maxSubTasks: number): PlanIssue[] {
  if (subTasks.length === 0) {
    return [{ kind: "empty-plan", message: "the plan has no sub-tasks" }];
  }
  const issues: PlanIssue[] = [];
  if (subTasks.length > maxSubTasks) {
    issues.push({
      kind: "too-many-sub-tasks",
      message: `the plan has ${subTasks.length} sub-tasks; the limit is ${maxSubTasks}`,
    });
  }
  const ids = new Set<string>();
  for (const subTask of subTasks) {
    if (ids.has(subTask.id)) {
      issues.push({
        kind: "duplicate-id",
        subTaskId: subTask.id,
        message: `sub-task "${subTask.id}" appears more than once`,
      });
    }
    ids.add(subTask.id);
  }
  for (const subTask of subTasks) {
    for (const dependency of new Set(subTask.dependsOn)) {
      if (dependency === subTask.id) {
        issues.push({
          kind: "self-dependency",
          subTaskId: subTask.id,
          message: `sub-task "${subTask.id}" depends on itself`,
        });
      } else if (!ids.has(dependency)) {
        issues.push({
          kind: "unknown-dependency",
          subTaskId: subTask.id,
          message: `sub-task "${subTask.id}" depends on unknown sub-task "${dependency}"`,
        });
      }
    }
  }
  const cycle = findCycle(subTasks);
  if (cycle) {
    issues.push({
      kind: "cycle",
      subTaskId: cycle[0],
      message: `dependency cycle: ${cycle.join(" -> ")}`,
    });
  }
  return issues;
}

/** The first cycle found (ids, first repeated at the end), ignoring self-loops and unknown ids. */
function findCycle(subTasks: readonly SubTask[]): string[] | undefined {
  const edges = new Map(subTasks.map((s) => [s.id, s.dependsOn] as const));
  const state = new Map<string, "visiting" | "done">();
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    // Iterative depth-first search so a 50k-node chain cannot overflow the stack.
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, "visiting");
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      const deps = edges.get(frame.id) ?? [];
      if (frame.next >= deps.length) {
        state.set(frame.id, "done");
        stack.pop();
        continue;
      }
      const dep = deps[frame.next++]!;
      if (dep === frame.id || !edges.has(dep)) continue;
      const seen = state.get(dep);
      if (seen === "visiting") {
        const from = stack.findIndex((f) => f.id === dep);
        return [...stack.slice(from).map((f) => f.id), dep];
      }
      if (seen === undefined) {
        state.set(dep, "visiting");
        stack.push({ id: dep, next: 0 });
      }
    }
  }
  return undefined;
}
