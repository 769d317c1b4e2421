import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gitIn, type RecordedRequest, roleOf, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { candidateModel, modelOf, ownSum, sumPlan, sums } from "../test-support/best-of-fixture.js";
import {
  captureIo,
  codexArgs,
  compatibleArgs,
  processesUnder,
  runJson,
  tempRepo,
  testScratch,
  useCodexKey,
  worktreesLeft,
} from "../test-support/cli-harness.js";
import { completedJudge } from "../test-support/scripted-replies.js";

// Codex: the agent is not the subject; its start costs a twentieth of opencode's.
useCodexKey();
const scratch = testScratch();

/** The scripted model of a candidate's `agentModel` (`codex:good` → `good`). */
const modelIn = (agentModel: string | undefined) => agentModel?.split(":")[1];

const judge = completedJudge("sum.js written.");

/** The comparative judge reads the diffs: it names the candidate whose sum is `a + b`. */
function chooseGood(request: RecordedRequest) {
  const prompt = JSON.stringify(request.body);
  const attemptOf = (model: string) =>
    new RegExp(`Candidate attempt (\\d+) \\(${candidateModel(model)}\\)`).exec(prompt)?.[1];
  const good = attemptOf("good");
  const weak = attemptOf("weak");
  return {
    text: JSON.stringify({
      winner: good ? Number(good) : null,
      reasons: "Only one adds its arguments; the other returns 5 for 2 and 3 alone.",
      losers: weak ? [{ attempt: Number(weak), why: "Hard-codes 2 + 3; wrong elsewhere." }] : [],
    }),
  };
}

function repoWithSum(): string {
  return tempRepo("taskledger-best-of-", { "sum.js": sums.bad! });
}

const candidateArgs = ["good", "bad", "weak"].flatMap((m) => [
  "--candidate-model",
  candidateModel(m),
]);

/** Best of two, both candidates on `model`, then one retry on the executor's model. */
const twoOn = (model: string) => [
  "--best-of",
  "2",
  "--candidate-model",
  candidateModel(model),
  "--max-retries",
  "1",
];

describe("--best-of: parallel candidates, chosen by evidence (real Codex, real git)", () => {
  it("merges the right candidate of three, keeps the others under refs and reports why they lost", async () => {
    const repo = repoWithSum();
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(sumPlan) },
        judge,
        choose: chooseGood,
        agent: ownSum("bad"),
      }),
    });
    const { code, report, err } = await runJson("Make sum.js add", [
      ...codexArgs(server.openaiBaseURL, "m"),
      "--cwd",
      repo,
      "--best-of",
      "3",
      ...candidateArgs,
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(readFileSync(join(repo, "sum.js"), "utf8")).toBe(sums.good);
    const [round] = report.subTasks[0]!.candidates!;
    const byModel = Object.fromEntries(round!.candidates.map((c) => [modelIn(c.agentModel), c]));
    expect(round).toMatchObject({ round: 1, reason: "risky", by: "judge" });
    expect(round!.winner).toBe(byModel.good!.attempt);
    expect(byModel.good!.lost).toBeUndefined();
    expect(byModel.bad).toMatchObject({
      completed: false,
      lost: expect.stringMatching(/^Incomplete/),
    });
    expect(byModel.weak).toMatchObject({
      completed: true,
      lost: "Hard-codes 2 + 3; wrong elsewhere.",
    });
    // The losers' work is kept: each ref holds the sum.js that candidate wrote.
    for (const loser of [byModel.bad!, byModel.weak!]) {
      expect(loser.ref).toMatch(/^refs\/taskledger\//);
      expect(gitIn(repo, "show", `${loser.ref}:sum.js`)).toBe(
        sums[modelIn(loser.agentModel)!]!.trim(),
      );
    }
    // The judge is asked of the two that passed their checks, not of the one that failed them.
    expect(server.requests.filter((r) => roleOf(r) === "judge")).toHaveLength(2);
    // One comparative call, shown only the two that passed their checks.
    const choices = server.requests.filter((r) => roleOf(r) === "choose");
    expect(choices).toHaveLength(1);
    const shown = JSON.stringify(choices[0]!.body);
    expect(shown).not.toContain(`${candidateModel("bad")})`);
    // It reads their diffs, where the weak one's special case is plain.
    expect(shown).toContain("a === 2 && b === 3 ? 5 : 0");
    expect(shown).toContain("a + b");
    expect(report.candidates!.rounds).toBe(1);
    const extra = report.candidates!.extraUsage;
    expect(extra.inputTokens + extra.outputTokens).toBeGreaterThan(0);
    expect(err()).toContain(`attempt ${round!.winner} chosen (judge)`);
    expect(await worktreesLeft(repo)).toEqual({ outside: [], held: [] });
    expect(await processesUnder(repo)).toEqual([]);
  }, 180_000);

  it("with no candidate complete, the ladder goes on: a retry on the executor's model finishes it", async () => {
    const repo = repoWithSum();
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(sumPlan) },
        judge,
        agent: (request: RecordedRequest) =>
          // Every candidate writes the wrong sum; the retry on `m` writes the right one.
          modelOf(request) === "m"
            ? ownSum("good")(request)
            : ownSum("bad")({
                ...request,
                body: { ...(request.body as object), model: "bad" },
              }),
      }),
    });
    const { code, report, err } = await runJson("Make sum.js add", [
      ...codexArgs(server.openaiBaseURL, "m"),
      "--cwd",
      repo,
      ...twoOn("bad"),
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    const [sub] = report.subTasks;
    expect(sub!.candidates).toHaveLength(1);
    expect(sub!.candidates![0]).toMatchObject({ winner: null, by: "none" });
    expect(sub!.attempts).toBe(3);
    // The retry is announced under the number it runs as, past both candidates'.
    expect(err()).toContain("retrying (attempt 3)");
    expect(readFileSync(join(repo, "sum.js"), "utf8")).toBe(sums.good);
    expect(server.requests.filter((r) => roleOf(r) === "choose")).toHaveLength(0);
  }, 180_000);

  it("a judge that chooses none merges no candidate: the ladder's retry on the executor's model lands", async () => {
    const repo = repoWithSum();
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(sumPlan) },
        judge,
        // Both candidates pass the weak check; the judge reads their diffs and takes neither.
        choose: {
          text: JSON.stringify({
            winner: null,
            reasons: "Both hard-code 2 + 3; neither adds.",
            losers: [],
          }),
        },
        // The candidates (on `weak`) hard-code the sum; the retry on `m` writes the right one.
        agent: ownSum("good"),
      }),
    });
    const { code, report, err } = await runJson("Make sum.js add", [
      ...codexArgs(server.openaiBaseURL, "m"),
      "--cwd",
      repo,
      ...twoOn("weak"),
    ]);
    expect(code, err()).toBe(0);
    const [sub] = report.subTasks;
    expect(sub!.candidates).toHaveLength(1);
    const [round] = sub!.candidates!;
    expect(round).toMatchObject({ winner: null, by: "judge" });
    expect(round!.candidates.map((c) => c.completed)).toEqual([true, true]);
    expect(server.requests.filter((r) => roleOf(r) === "choose")).toHaveLength(1);
    // Neither candidate's commit is on the run's branch: the retry's work is what was applied.
    expect(readFileSync(join(repo, "sum.js"), "utf8")).toBe(sums.good);
    const branch = gitIn(repo, "for-each-ref", "--format=%(refname)", "refs/heads/taskledger/");
    expect(branch).not.toBe("");
    const history = gitIn(repo, "rev-list", branch).split("\n");
    for (const c of round!.candidates) expect(history).not.toContain(c.commit);
    expect(sub).toMatchObject({ status: "completed", attempts: 3 });
    expect(err()).toContain("retrying (attempt 3)");
    expect(await worktreesLeft(repo)).toEqual({ outside: [], held: [] });
  }, 180_000);

  it("is a usage error with --isolation shared, and with --candidate-model alone", async () => {
    const server = await scratch.server({ replies: [] });
    for (const extra of [
      ["--best-of", "3", "--isolation", "shared"],
      ["--candidate-model", `${compatibleProviderId}/x`],
      ["--best-of", "9"],
    ]) {
      const t = captureIo();
      const argv = ["run", "x", "--yes", ...compatibleArgs(server.openaiBaseURL), ...extra];
      expect(await runCli(argv, t.io)).toBe(2);
      expect(t.err()).toMatch(/--best-of|--candidate-model/);
    }
    expect(server.requests).toHaveLength(0);
  });
});
