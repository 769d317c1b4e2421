import { readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { createGitRepo, roleOf, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { candidateModel, modelOf, ownSum, sumPlan, sums } from "../test-support/best-of-fixture.js";
import { codexArgs, runJson, testScratch, useCodexKey } from "../test-support/cli-harness.js";
import { completedJudge } from "../test-support/scripted-replies.js";

// Codex: the agent is not the subject; its start costs a twentieth of opencode's.
useCodexKey();
const scratch = testScratch();

// The same sub-task, not marked risky: only --best-of-all, the config or the ladder give it a round.
const plainPlan = { subTasks: sumPlan.subTasks.map((s) => ({ ...s, risky: false })) };
const good = candidateModel("good");
const bad = candidateModel("bad");

/** A run of the plain sub-task on real Codex and git, with `extra` arguments. */
async function run(extra: string[], config?: unknown) {
  const dir = await scratch.directory("taskledger-best-of-options-");
  createGitRepo(dir, {
    "sum.js": sums.bad!,
    ...(config === undefined ? {} : { "taskledger.json": JSON.stringify(config) }),
  });
  const server = await scratch.server({
    replies: scriptByRole({
      plan: { text: JSON.stringify(plainPlan) },
      judge: completedJudge("Wrote sum.js."),
      // Each model writes its own sum.js; the executor's own model (`m`) writes the wrong one.
      agent: ownSum("bad", "I wrote sum.js."),
    }),
  });
  const { code, err, report } = await runJson("Make sum.js add", [
    ...codexArgs(server.openaiBaseURL, "m"),
    "--cwd",
    dir,
    "--max-retries",
    "0",
    "--no-replan",
    ...extra,
  ]);
  const models = server.requests.filter((r) => roleOf(r) === "agent").map(modelOf);
  return { code, err: err(), report, sub: report.subTasks[0]!, models, dir, server };
}

const candidates = ["--best-of", "2", "--candidate-model", good, "--candidate-model", bad];

describe("--best-of's scope and ladder, from the command line and taskledger.json (real Codex)", () => {
  it("the ladder (on by default): a sub-task whose attempt failed gets one round of candidates", async () => {
    const r = await run(candidates);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain("gets parallel candidates");
    expect(r.sub).toMatchObject({ status: "completed", attempts: 3 });
    expect(r.sub.candidates).toEqual([
      expect.objectContaining({ reason: "ladder", winner: 2, by: "single" }),
    ]);
    expect(readFileSync(join(r.dir, "sum.js"), "utf8")).toBe(sums.good);
  }, 180_000);

  it("--no-best-of-ladder: no round after the failed attempt; the sub-task fails", async () => {
    const r = await run([...candidates, "--no-best-of-ladder"]);
    expect(r.code).toBe(1);
    expect(r.sub).toMatchObject({ status: "failed", attempts: 1 });
    expect(r.sub.candidates).toBeUndefined();
    expect(r.models.every((m) => m === "m")).toBe(true);
  }, 180_000);

  it("--best-of-all: a sub-task not marked risky starts with a round", async () => {
    const r = await run([...candidates, "--best-of-all"]);
    expect(r.code, r.err).toBe(0);
    expect(r.sub).toMatchObject({ status: "completed", attempts: 2 });
    expect(r.sub.candidates).toEqual([
      expect.objectContaining({ reason: "all", winner: 1, by: "single" }),
    ]);
    expect(r.models).not.toContain("m");
  }, 180_000);

  it("bestOf in taskledger.json sets the same, and the command line wins over it", async () => {
    const config = { bestOf: { candidates: 2, for: "all", ladder: false, models: [bad, good] } };
    const r = await run([], config);
    expect(r.code, r.err).toBe(0);
    expect(r.sub.candidates).toEqual([
      expect.objectContaining({ reason: "all", winner: 2, by: "single" }),
    ]);
    expect(readFileSync(join(r.dir, "sum.js"), "utf8")).toBe(sums.good);
    await r.server.close();
    await rm(r.dir, { recursive: true, force: true });
    // --best-of 1 over the config's 2: one attempt at a time, and with the ladder off it fails.
    const one = await run(["--best-of", "1"], config);
    expect(one.code).toBe(1);
    expect(one.sub).toMatchObject({ status: "failed", attempts: 1 });
    expect(one.sub.candidates).toBeUndefined();
  }, 240_000);
});
