// Shared by core's tests; tsconfig.build.json leaves this folder out of the package.
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTaskInput } from "../ledger/sub-task.js";
import { emptyUsage } from "../usage/usage.js";

/** A sub-task named after its id, depending on `dependsOn`; `extra` overrides any field. */
export function task(id: string, dependsOn: string[] = [], extra: Partial<SubTaskInput> = {}) {
  return {
    id,
    title: `Title ${id}`,
    description: `Do ${id}`,
    successCriteria: [`${id} is done`],
    dependsOn,
    ...extra,
  };
}

/** A judge's verdict that passes the attempt, with nothing more to say. */
export function passedEntry(): ProgressEntry {
  return {
    completed: true,
    summary: "ok",
    outputData: "",
    feedback: "",
    evidence: [],
    usage: emptyUsage(),
  };
}
