import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import type { AgentName } from "@taskledger/executor";
import { afterToolResult, createGitRepo, createModelServer, roleOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { JsonReport } from "../output/json-report.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { candidateModel, modelOf, sumPlan, sums } from "../test-support/best-of-fixture.js";
import {
  builtCli,
  killProcessesUnder,
  processesLeft,
  runDirectories,
  runLogOf,
  runOn,
  spawnCli,
  worktreesLeft,
} from "../test-support/cli-harness.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

type Stop = "kill-candidates" | "kill-choice" | "cancel-candidates";

/**
 * A best-of-3 run through the built CLI, stopped at `stop` (`kill -9` of the manager, or a
 * SIGINT), then resumed from its store by a second process.
 */
async function stopAndResume(stop: Stop) {
  const { root, cwd, store } = await runDirectories(`taskledger-best-of-${stop}-`);
  // The killed candidate's tokens come from opencode's usage at each step (Codex reports a turn's
  // only once it ends); the other stops run on Codex, whose start costs a twentieth of opencode's.
  const agent: AgentName = stop === "kill-candidates" ? "opencode" : "codex";
  const named = (model: string) => candidateModel(model, agent);
  const { args: runArgs, env } = runOn(agent);
  createGitRepo(cwd, { "sum.js": sums.bad! });
  let victim: ChildProcess | undefined;
  let stopped = false;
  const stopNow = () => {
    if (stopped || !victim?.pid) return;
    stopped = true;
    process.kill(victim.pid, stop === "cancel-candidates" ? "SIGINT" : "SIGKILL");
  };
  // Stops once `ready` holds of the log: polled, as the manager writes it.
  const stopWhen = (ready: (log: RunEvent[]) => boolean) => {
    const timer = setInterval(async () => {
      if (stopped) return clearInterval(timer);
      if (ready(await runLogOf(store))) {
        clearInterval(timer);
        stopNow();
      }
    }, 50);
  };
  const agentsAfterStop: string[] = [];
  const server = await createModelServer({
    replies: (request) => {
      const role = roleOf(request);
      if (role === "plan") return { text: JSON.stringify(sumPlan) };
      if (role === "judge") return completedJudge("Wrote sum.js.");
      if (role === "choose") {
        if (!stopped && stop === "kill-choice") {
          stopNow();
          return { hang: true };
        }
        const good = new RegExp(`Candidate attempt (\\d+) \\(${named("good")}\\)`).exec(
          JSON.stringify(request.body),
        )?.[1];
        return {
          text: JSON.stringify({ winner: Number(good), reasons: "It adds.", losers: [] }),
        };
      }
      const model = modelOf(request);
      if (stopped) agentsAfterStop.push(model);
      if (!stopped && stop === "kill-candidates" && model === "good" && afterToolResult(request)) {
        // `good` wrote sum.js (a step with its tokens) and works on while the others finish and
        // are judged; then the manager dies.
        stopWhen((log) => log.filter((r) => r.type === "sub-task-evaluated").length >= 2);
        return { hang: true };
      }
      if (!stopped && stop === "cancel-candidates") {
        stopWhen(
          (log) =>
            log.filter((r) => r.type === "attempt-process").length >= 3 &&
            log.filter((r) => r.type === "sub-task-started").length >= 3,
        );
        return { hang: true };
      }
      if (afterToolResult(request)) return { text: "I wrote sum.js as the sub-task asks." };
      return writeCall("sum.js", sums[model]!, agent);
    },
  });
  const args = [
    ...runArgs(server.openaiBaseURL, "m", "manager"),
    "--store",
    store,
    "--cwd",
    cwd,
    "--json",
  ];
  try {
    const candidates = ["good", "bad", "weak"].flatMap((m) => ["--candidate-model", named(m)]);
    const first = spawnCli(
      ["run", "Make sum.js add", "--yes", ...args, "--best-of", "3", ...candidates],
      env,
    );
    victim = first.child;
    const ended = await first.exit;
    const before = await runLogOf(store);
    // A cancelled run's processes are gone before it exits; a killed one's are the resume's to stop.
    const leftAtStop = stop === "cancel-candidates" ? await processesLeft(root, cwd) : [];
    const runId = before[0]!.runId;
    const second = spawnCli(["resume", runId, "--store", store, "--json"], env);
    const resumed = await second.exit;
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout) as JsonReport;
    const after = await runLogOf(store);
    const leftover = await processesLeft(root, cwd);
    return {
      ended,
      before,
      after,
      report,
      leftAtStop,
      leftover,
      agentsAfterStop,
      choices: server.requests.filter((r) => roleOf(r) === "choose").length,
      sum: await readFile(join(cwd, "sum.js"), "utf8"),
      worktrees: await worktreesLeft(cwd),
    };
  } finally {
    if (victim?.pid && !stopped) victim.kill("SIGKILL");
    await server.close();
    await killProcessesUnder(root);
    await rm(root, { recursive: true, force: true });
  }
}

const chosen = (log: RunEvent[]) => log.filter((r) => r.type === "candidates-chosen");

describe.runIf(process.platform === "linux")("--best-of across a stop and a resume", () => {
  it.concurrent("kill -9 while candidates run: the finished ones are not run again, the choice is made once", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const r = await stopAndResume("kill-candidates");
    expect(r.ended.signal).toBe("SIGKILL");
    expect(r.report.status).toBe("completed");
    expect(r.sum).toBe(sums.good);
    // Only the candidate that was still running ran again, under a new attempt number.
    expect(r.agentsAfterStop.every((model) => model === "good")).toBe(true);
    const rerun = r.after.find(
      (e) => e.type === "sub-task-started" && e.candidate?.replaces !== undefined,
    );
    expect(rerun).toMatchObject({ agentModel: `${compatibleProviderId}/good` });
    // The replaced candidate stays in the report, with the tokens its killed session spent.
    const [round] = r.report.subTasks[0]!.candidates!;
    const replaced = round!.candidates.find((c) => c.replacedBy !== undefined);
    expect(replaced).toMatchObject({
      agentModel: `${compatibleProviderId}/good`,
      completed: false,
      lost: expect.stringMatching(/^Interrupted/),
    });
    expect(replaced!.replacedBy).toBe(rerun?.type === "sub-task-started" ? rerun.attempt : -1);
    expect(replaced!.usage.inputTokens).toBeGreaterThan(0);
    expect(round!.candidates).toHaveLength(4);
    expect(chosen(r.after)).toHaveLength(1);
    const starts = r.after.flatMap((e) => (e.type === "sub-task-started" ? [e.attempt] : []));
    expect(new Set(starts).size).toBe(starts.length);
    expect(r.leftover).toEqual([]);
    // The dead manager's slot locks name a dead process: free to the next run, not held.
    expect(r.worktrees.outside).toEqual([]);
  }, 240_000);

  it.concurrent("kill -9 during the choice: no candidate runs again and the choice is made once", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const r = await stopAndResume("kill-choice");
    expect(r.ended.signal).toBe("SIGKILL");
    expect(chosen(r.before)).toHaveLength(0);
    expect(r.report.status).toBe("completed");
    expect(r.sum).toBe(sums.good);
    expect(r.agentsAfterStop).toEqual([]);
    expect(r.choices).toBe(2);
    expect(chosen(r.after)).toHaveLength(1);
    expect(r.leftover).toEqual([]);
  }, 240_000);

  it.concurrent("a cancel while candidates run leaves no process; resume runs them again and finishes", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const r = await stopAndResume("cancel-candidates");
    expect(r.ended.code).not.toBe(0);
    expect(r.leftAtStop).toEqual([]);
    expect(r.before.at(-1)).toMatchObject({
      type: "run-finished",
      report: { status: "cancelled" },
    });
    expect(r.report.status).toBe("completed");
    expect(r.sum).toBe(sums.good);
    expect(chosen(r.after)).toHaveLength(1);
    expect(r.leftover).toEqual([]);
  }, 240_000);
});
