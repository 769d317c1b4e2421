// A monorepo whose package is the run's directory, and the one sub-task the tests that try to
// write outside it plan. Not part of the package.
import { join } from "node:path";
import { tempRepo } from "./cli-harness.js";

/** A repository (named `prefix`…) with a root `package.json` and `packages/app`, the run's `cwd`. */
export function monorepoPackage(prefix: string): { repo: string; cwd: string } {
  const repo = tempRepo(prefix, { "package.json": "{}\n", "packages/app/index.js": "app\n" });
  return { repo, cwd: join(repo, "packages", "app") };
}

/** One sub-task: write inside.txt in the run's directory. */
export const insidePlan = {
  subTasks: [
    {
      id: "a",
      title: "Write inside.txt",
      description: "Write inside.txt",
      successCriteria: ["inside.txt exists"],
      dependsOn: [],
    },
  ],
};
