// Shared by core's tests; tsconfig.build.json leaves this folder out of the package.
import type { SubTaskInput } from "../ledger/sub-task.js";

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
