import type { SubTask } from "@taskledger/core";

/** The one sub-task the executor's tests attempt: the executor only passes it on. */
export const subTask: SubTask = {
  id: "s1",
  title: "s1",
  description: "s1",
  successCriteria: ["done"],
  dependsOn: [],
  checks: [],
};
