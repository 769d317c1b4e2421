import type { SubTask } from "@taskledger/core";

/** The one-line sub-task the start benchmarks attempt (a module of its own: importing it starts nothing). */
export const subTask: SubTask = {
  id: "ok",
  title: "ok",
  description: "Say ok.",
  successCriteria: ["ok"],
  dependsOn: [],
  checks: [],
};
