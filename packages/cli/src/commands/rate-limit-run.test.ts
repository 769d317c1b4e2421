import { existsSync, writeFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import {
  acceptanceReply,
  afterToolResult,
  createGitRepo,
  createModelServer,
  insufficientQuotaError,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { exitCodes } from "../cli-io.js";
import type { JsonReport } from "../output/json-report.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import {
  agentArgs,
  builtCli,
  killProcessesUnder,
  processesLeft,
  runDirectories,
  runLogOf,
  spawnCli,
} from "../test-support/cli-harness.js";
import { killResumeRun } from "../test-support/kill-resume.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

// Issue 49 through the built CLI and the real opencode: a provider's 429 is weather, its spent
// quota a stop (or a move to the alternate agent model). packages/core/src/governor has the rest.

const plan = {
  subTasks: [
    {
      id: "notes",
      title: "Write the notes",
      description: "Write NOTES.md saying that rate limits are weather.",
      successCriteria: ["NOTES.md says that rate limits are weather"],
      dependsOn: [],
      checks: [],
    },
  ],
};

/** A small project in `cwd` and the plan in a file beside it: what `--plan` runs. */
function project(root: string, cwd: string): string {
  createGitRepo(cwd, { "README.md": "# Notes\n", "src/index.js": "export const x = 1;\n" });
  const file = join(root, "plan.json");
  writeFileSync(file, JSON.stringify(plan));
  return file;
}

// What opencode does with a provider's 429 before it gives up (docs/executor.md): asks again five
// times, each after the answer's Retry-After.
const opencodeRequestsPerAttempt = 6;
// Its own retries made quick: the last answer, the one the attempt ends on, says the real wait.
const quick = { "retry-after-ms": "10" };
const retryAfterSeconds = 6;

const modelOf = (request: RecordedRequest) => String((request.body as { model?: string }).model);

/** The agent that does the work: writes NOTES.md, then says it is done. */
function working(request: RecordedRequest): ScriptedReply {
  return afterToolResult(request)
    ? { text: "I wrote NOTES.md." }
    : writeCall("NOTES.md", "Rate limits are weather.\n");
}

/** The manager's calls: the judge says complete, the acceptance (unscripted) satisfied. */
function manager(request: RecordedRequest): ScriptedReply | undefined {
  const role = roleOf(request);
  if (role === "judge") return completedJudge("Wrote NOTES.md.");
  if (role === "accept") return acceptanceReply();
  return undefined;
}

const limitedRecords = (log: readonly RunEvent[]) =>
  log.flatMap((r) => (r.type === "provider-limited" ? [r] : []));

/** How each attempt ended, one a line: what a failed count is read against. */
const attemptsOf = (log: readonly RunEvent[]) =>
  log
    .flatMap((r) =>
      r.type === "attempt-finished"
        ? [`${r.subTaskId}#${r.attempt} ${r.result.outcome} ${r.result.error ?? ""}`]
        : [],
    )
    .join("\n");

describe.runIf(process.platform === "linux")("a provider's 429 through the CLI", () => {
  it("kill -9 while the run waits for its provider, then resume: the wait holds, one counted attempt, rate-limited apart", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const run = await killResumeRun("taskledger-rate-limit-kill-");
    const planFile = project(run.root, run.cwd);
    // Until the kill, the agent's provider refuses every request; then it is open again.
    let refused = 0;
    let resumedAgentAt: number | undefined;
    const server = await createModelServer({
      replies: (request) => {
        if (roleOf(request) !== "agent") return manager(request);
        if (run.killed) {
          resumedAgentAt ??= Date.now();
          return working(request);
        }
        refused++;
        const last = refused % opencodeRequestsPerAttempt === 0;
        return {
          status: 429,
          headers: last ? { "retry-after": String(retryAfterSeconds) } : quick,
        };
      },
    });
    // The kill comes once the pause is logged: the run then waits, no attempt running.
    const watching = setInterval(async () => {
      // A line read half-written is read whole next time.
      const log = await runLogOf(run.store).catch(() => []);
      if (!run.killed && limitedRecords(log).length > 0) run.kill();
    }, 25);
    try {
      const { before, after, report, leftover } = await run.killThenResume([
        "--plan",
        planFile,
        "--yes",
        ...agentArgs(server.openaiBaseURL),
        "--cwd",
        run.cwd,
      ]);
      const [limited, ...more] = limitedRecords(before);
      expect(more).toEqual([]);
      expect(limited).toMatchObject({
        key: "agent",
        provider: compatibleProviderId,
        subTaskId: "notes",
        attempt: 1,
        limit: { kind: "rate-limit", statusCode: 429, retryAfterMs: retryAfterSeconds * 1000 },
      });
      expect(limited?.until).toBeDefined();
      expect(limited?.waitMs).toBeGreaterThanOrEqual(retryAfterSeconds * 1000);
      const until = Date.parse(limited!.until!);
      // One attempt's requests reached the provider before the kill: no other start went out.
      expect(refused).toBe(opencodeRequestsPerAttempt);
      // The killed run was waiting, not running an attempt: the resume found none interrupted.
      const resumedAt = after.findIndex((r) => r.type === "run-resumed");
      expect(resumedAt).toBe(before.length);
      expect(after[resumedAt]).toMatchObject({ interrupted: [] });
      // The resumed run kept the recorded pause: its agent asked nothing before `until`.
      expect(resumedAgentAt).toBeDefined();
      expect(resumedAgentAt!).toBeGreaterThanOrEqual(until);

      expect(report.status, report.reason ?? "").toBe("completed");
      expect(report.subTasks, attemptsOf(after)).toMatchObject([
        { id: "notes", status: "completed", attempts: 1, rateLimited: 1 },
      ]);
      expect(report.providers).toMatchObject([
        { key: "agent", provider: compatibleProviderId, waits: 1, rejected: 1 },
      ]);
      // A rate limit is no try of the agent's: nothing was retried, escalated or replanned.
      const types = new Set(after.map((r) => r.type));
      for (const never of ["sub-task-retrying", "sub-task-escalated", "plan-revised"])
        expect(types.has(never as RunEvent["type"]), never).toBe(false);
      expect(await readFile(join(run.cwd, "NOTES.md"), "utf8")).toBe("Rate limits are weather.\n");
      expect(leftover).toEqual([]);
    } finally {
      clearInterval(watching);
      await server.close();
      await run.dispose();
    }
  }, 180_000);
});

/**
 * `taskledger run --plan … --json` whose agent model's provider answers OpenAI's
 * `insufficient_quota` 429 (its five retries made quick) and whose `agent-2` works.
 */
async function quotaRun(extraArgs: string[]) {
  const { root, cwd, store } = await runDirectories("taskledger-quota-");
  const planFile = project(root, cwd);
  const server = await createModelServer({
    replies: (request) => {
      if (roleOf(request) !== "agent") return manager(request);
      return modelOf(request) === "agent" ? insufficientQuotaError(quick) : working(request);
    },
  });
  try {
    const ended = await spawnCli([
      "run",
      "--plan",
      planFile,
      "--yes",
      ...agentArgs(server.openaiBaseURL),
      "--cwd",
      cwd,
      "--store",
      store,
      "--json",
      ...extraArgs,
    ]).exit;
    const log = await runLogOf(store);
    const requests = server.requests.map((r) => ({ role: roleOf(r), model: modelOf(r) }));
    const notes = existsSync(join(cwd, "NOTES.md"));
    const leftover = await processesLeft(root, cwd);
    return { ended, log, requests, notes, leftover, unexpected: server.unexpected };
  } finally {
    await server.close();
    await killProcessesUnder(root);
    await rm(root, { recursive: true, force: true });
  }
}

describe.runIf(process.platform === "linux")("a provider's spent quota through the CLI", () => {
  it.concurrent("with no alternate agent model: partial, one line naming the provider and what it said, one attempt's requests", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const { ended, log, requests, notes, leftover, unexpected } = await quotaRun([]);
    expect(ended.code, ended.stderr).toBe(exitCodes.notCompleted);
    const report = JSON.parse(ended.stdout) as JsonReport;
    expect(report.status).toBe("partial");
    expect(report.reason).toMatch(
      new RegExp(
        `${compatibleProviderId} says its quota is exhausted: You exceeded your current quota`,
      ),
    );
    expect(report.reason).not.toMatch(/\n/);
    expect(report.subTasks, attemptsOf(log)).toMatchObject([
      { id: "notes", status: "failed", failure: "provider-limit", attempts: 0, rateLimited: 1 },
    ]);
    // No loop: the provider got one attempt's requests (opencode's own retries), nothing more.
    expect(requests).toEqual(
      Array.from({ length: opencodeRequestsPerAttempt }, () => ({ role: "agent", model: "agent" })),
    );
    expect(log.filter((r) => r.type === "sub-task-started")).toHaveLength(1);
    expect(limitedRecords(log)).toMatchObject([
      { key: "agent", limit: { kind: "quota", statusCode: 429 }, stops: true },
    ]);
    expect(limitedRecords(log)[0]?.until).toBeUndefined();
    expect(unexpected).toBe(0);
    expect(notes).toBe(false);
    expect(leftover).toEqual([]);
  }, 120_000);

  it.concurrent("with --alternate-agent-model: the sub-task moves to it and completes", async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const alternate = `${compatibleProviderId}/agent-2`;
    const { ended, log, requests, notes, leftover, unexpected } = await quotaRun([
      "--alternate-agent-model",
      alternate,
    ]);
    expect(ended.code, ended.stderr).toBe(exitCodes.completed);
    const report = JSON.parse(ended.stdout) as JsonReport;
    expect(report.status, report.reason ?? "").toBe("completed");
    expect(report.subTasks, attemptsOf(log)).toMatchObject([
      { id: "notes", status: "completed", rateLimited: 1 },
    ]);
    // Attempt 1 on the spent model, then every attempt on the alternate, the last one merged.
    const started = log.flatMap((r) => (r.type === "sub-task-started" ? [r] : []));
    expect(started[0]).toMatchObject({ attempt: 1 });
    expect(started[0]?.agentModel).toBeUndefined();
    expect(started.slice(1).length).toBeGreaterThan(0);
    for (const later of started.slice(1)) expect(later.agentModel).toBe(alternate);
    expect(log.find((r) => r.type === "sub-task-escalated")).toMatchObject({
      subTaskId: "notes",
      step: "alternate-model",
      agentModel: alternate,
      reason: expect.stringContaining("says its quota is exhausted"),
    });
    expect(limitedRecords(log)).toHaveLength(1);
    expect(limitedRecords(log)[0]?.stops).toBeUndefined();
    const agents = requests.filter((r) => r.role === "agent");
    // The spent model was asked by one attempt only; the alternate did the work.
    expect(agents.filter((r) => r.model === "agent")).toHaveLength(opencodeRequestsPerAttempt);
    expect(agents.filter((r) => r.model === "agent-2").length).toBeGreaterThan(0);
    expect(unexpected).toBe(0);
    expect(notes).toBe(true);
    expect(leftover).toEqual([]);
  }, 120_000);
});
