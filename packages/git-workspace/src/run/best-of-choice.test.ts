import { execFileSync } from "node:child_process";
import { rm } from "node:fs/promises";
import type { RunEvent, RunEventOf } from "@taskledger/core";
import { createScriptedModel } from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runRefs } from "../git/run-refs.js";
import {
  createManager,
  makeRepo,
  read,
  scriptedWorkExecutor,
  sh,
  task,
  writeFiles,
} from "../test-support/git-repo.js";

const of = <K extends RunEvent["type"]>(records: readonly RunEvent[], type: K) =>
  records.filter((r): r is RunEventOf<K> => r.type === type);

/** True when `commit` is in the history of `tip`. */
function isAncestor(repo: string, commit: string, tip: string): boolean {
  try {
    execFileSync("git", ["merge-base", "--is-ancestor", commit, tip], { cwd: repo });
    return true;
  } catch {
    return false;
  }
}

let repo: string | undefined;
afterEach(async () => {
  if (repo) await rm(repo, { recursive: true, force: true });
  repo = undefined;
});

describe("a round of candidates on real git", () => {
  it("merges no candidate when the judge chooses none: the ladder's retry is what lands", async () => {
    repo = makeRepo({ "sum.js": "module.exports = () => 0;\n" });
    // Candidates (attempts 1 and 2) each write a wrong sum; the retry after them, the right one.
    const sums: Record<number, string> = {
      1: "module.exports = (a, b) => a - b;\n",
      2: "module.exports = (a, b) => a * b;\n",
      3: "module.exports = (a, b) => a + b;\n",
    };
    const executor = scriptedWorkExecutor({
      sum: async (cwd, { attempt }) => {
        writeFiles(cwd, { "sum.js": sums[attempt] ?? "" });
        return { filesChanged: ["sum.js"] };
      },
    });
    const model = createScriptedModel({
      responses: [{ object: { winner: null, reasons: "Neither one adds.", losers: [] } }],
    });
    const records: RunEvent[] = [];
    const report = await createManager({
      cwd: repo,
      model,
      executor,
      bestOf: 2,
      project: false,
      createRunId: () => "run-none",
    }).run("Make sum.js add", {
      plan: { subTasks: [task("sum", [], { risky: true })] },
      onEvent: (e) => records.push(e),
    });
    expect(report.status).toBe("completed");
    const [chosen] = of(records, "candidates-chosen");
    expect(chosen).toMatchObject({ by: "judge", reason: "Neither one adds." });
    expect(chosen!.winner).toBeUndefined();
    // Both candidates' work is kept under refs, and neither is in the run's history.
    const tip = sh(repo, "rev-parse", runRefs("run-none").tip);
    for (const candidate of chosen!.candidates) {
      expect(candidate.ref).toMatch(/^refs\/taskledger\//);
      expect(isAncestor(repo, candidate.commit!, tip)).toBe(false);
    }
    expect(of(records, "sub-task-completed")).toEqual([
      expect.objectContaining({ subTaskId: "sum", attempts: 3 }),
    ]);
    expect(read(repo, "sum.js")).toBe(sums[3]);
    expect(executor.calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
  });
});
