import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Check, Evaluator, RunEvent } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import {
  createManager,
  makeRepo,
  passedEntry,
  scriptedWorkExecutor,
  task,
} from "../test-support/git-repo.js";
import { projectDigests } from "./build-project-digest.js";

/**
 * An evaluator that passes every attempt and keeps the checks it was given; its `runChecks`
 * runs commands for real, as `@taskledger/evaluator`'s does: the manager is the subject.
 */
function recordingEvaluator() {
  const seen = new Map<string, Check[]>();
  const baselineDirs: string[] = [];
  // Every later call is the integration gate's, on a merged result: what it was given.
  const gated: string[][] = [];
  const evaluator: Evaluator = {
    async evaluate(input) {
      seen.set(input.subTask.id, input.subTask.checks);
      return passedEntry();
    },
    async runChecks(checks, { cwd }) {
      if (baselineDirs.length === 0) baselineDirs.push(cwd);
      else gated.push(checks.map((c) => (c.type === "command" ? c.argv.join(" ") : c.type)));
      return checks.map((check) => {
        if (check.type !== "command") return { passed: true, detail: "" };
        // Seen at the start commit: the attempt's file is not there yet.
        const started = existsSync(join(cwd, "src-a.js")) ? "after" : "before";
        const [program = "", ...args] = check.argv;
        const run = spawnSync(program, args, { cwd, encoding: "utf8" });
        return { passed: run.status === 0, detail: `exit ${run.status} (${started})` };
      });
    },
  };
  return Object.assign(evaluator, { seen, baselineDirs, gated });
}

describe("the project's commands before any change (baseline)", () => {
  it("runs them once at the start commit; one that already fails checks no sub-task", async () => {
    const repo = makeRepo({
      "package.json": JSON.stringify({
        scripts: { test: "node -e 0", typecheck: 'node -e "process.exit(2)"' },
      }),
    });
    const evaluator = recordingEvaluator();
    const executor = scriptedWorkExecutor({
      a: async (cwd) => {
        writeFileSync(join(cwd, "src-a.js"), "1\n");
        return {};
      },
      b: async (cwd) => {
        writeFileSync(join(cwd, "src-b.js"), "2\n");
        return {};
      },
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: repo,
      executor,
      evaluator,
      project: projectDigests({ cacheDir: mkdtempSync(join(tmpdir(), "digests-")) }),
    }).run("x", {
      plan: { subTasks: [task("a"), task("b", ["a"])] },
      onEvent: (e) => events.push(e),
    });
    expect(report.status).toBe("completed");
    const baseline = events.filter((e) => e.type === "project-baseline");
    expect(baseline).toHaveLength(1);
    expect(baseline[0]).toMatchObject({
      results: [
        { argv: ["npm", "test"], passed: true, detail: "exit 0 (before)" },
        { argv: ["npm", "run", "typecheck"], passed: false, detail: "exit 2 (before)" },
      ],
    });
    const argvs = (id: string) =>
      (evaluator.seen.get(id) ?? []).map((c) => (c.type === "command" ? c.argv.join(" ") : c.type));
    expect(argvs("a")).toEqual(["npm test"]);
    expect(argvs("b")).toEqual(["npm test"]);
    expect(evaluator.baselineDirs).toHaveLength(1);
    // Each merge was its attempt's own tree, checked by its evaluation: the gate ran nothing more
    // there; the final tip is checked once, with what passed at the start, never the failing one.
    expect(evaluator.gated).toEqual([["npm test"]]);
  });
});
