import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, watch } from "node:fs";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { processStartTime } from "@taskledger/core";
import { createModelServer, type RecordedRequest, scriptByRole } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createDemoReplies, demoRequest } from "../demo/demo-scenario.js";
import type { JsonReport } from "../output/json-report.js";
import {
  agentArgs,
  builtCli,
  killProcessesUnder,
  processesUnder,
  runDirectories,
  runOn,
  spawnCli,
  worktreesLeft,
} from "../test-support/cli-harness.js";
import { killResumeRun } from "../test-support/kill-resume.js";
import { bashCall, completedJudge } from "../test-support/scripted-replies.js";

type KillPoint = "planning" | "mid-attempt" | "before-evaluation";

function nameOf(request: RecordedRequest): string | undefined {
  return (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format
    ?.json_schema?.name;
}

/**
 * Runs the demo's request through the built CLI with a durable store, `kill -9`s the manager at
 * `point`, then resumes it with a second process: the report must be the uninterrupted one's.
 * Mid-attempt on opencode, whose warm server the killed manager leaves; the others on Codex (no
 * agent runs at the kill: the manager's log is the subject).
 */
async function killAndResume(point: KillPoint) {
  const agent = point === "mid-attempt" ? "opencode" : "codex";
  const on = runOn(agent);
  const run = await killResumeRun(`taskledger-kill-${point}-`, on.env);
  const { cwd } = run;
  // A repository: attempts run in worktrees, so a kill also leaves a worktree behind to clean up.
  execFileSync("git", ["init", "-q"], { cwd });
  const demo = createDemoReplies(agent);
  const server = await createModelServer({
    replies: (request) => {
      const name = nameOf(request);
      const isAgent = name === undefined;
      if (!run.killed && point === "planning" && name === "task_ledger") {
        run.kill();
        return { hang: true };
      }
      if (!run.killed && point === "mid-attempt" && isAgent) {
        // The agent's first model call proves its attempt runs: the manager dies now, mid-attempt.
        // The agent keeps running after its manager dies; this call is answered normally.
        run.kill();
      }
      if (!run.killed && point === "before-evaluation" && name === "progress_ledger_entry") {
        run.kill();
        return { hang: true };
      }
      return demo(request);
    },
  });
  try {
    const { report, before, after, leftover } = await run.killThenResume([
      demoRequest,
      "--yes",
      ...on.args(server.openaiBaseURL, "demo-agent", "demo-manager"),
      "--cwd",
      cwd,
    ]);
    const files = (await readdir(cwd)).filter((name) => !name.startsWith(".")).sort();
    const worktrees = await worktreesLeft(cwd);
    return { report, before, after, leftover, files, worktrees };
  } finally {
    await server.close();
    await run.dispose();
  }
}

describe.runIf(process.platform === "linux")("kill -9 of the manager, then resume", () => {
  for (const point of ["planning", "mid-attempt", "before-evaluation"] as const) {
    it.concurrent(`${point}: same report as an uninterrupted run, nothing completed twice, no process left`, async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { report, before, after, leftover, files, worktrees } = await killAndResume(point);
      expect(report.status).toBe("completed");
      expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([
        ["library", "completed"],
        ["tests", "completed"],
        ["docs", "completed"],
      ]);
      expect(report.subTasks.find((s) => s.id === "library")?.outputData).toContain(
        "export function greet",
      );
      // The log kept every record written before the kill.
      expect(after.slice(0, before.length)).toEqual(before);
      const resumedAt = after.findIndex((r) => r.type === "run-resumed");
      expect(resumedAt).toBe(before.length);
      const resumed = after[resumedAt];
      // Only a kill mid-attempt leaves an attempt the resume must call interrupted.
      expect(resumed?.type === "run-resumed" && resumed.interrupted).toEqual(
        point === "mid-attempt" ? [{ subTaskId: "library", attempt: 1 }] : [],
      );
      const startedAfter = after
        .slice(resumedAt)
        .flatMap((r) => (r.type === "sub-task-started" ? [`${r.subTaskId}#${r.attempt}`] : []));
      for (const id of ["library", "tests", "docs"]) {
        expect(
          after.filter((r) => r.type === "sub-task-completed" && r.subTaskId === id),
        ).toHaveLength(1);
      }
      const starts = after.flatMap((r) =>
        r.type === "sub-task-started" ? [`${r.subTaskId}#${r.attempt}`] : [],
      );
      expect(new Set(starts).size).toBe(starts.length);
      expect(leftover).toEqual([]);
      // The same tree as an uninterrupted run, applied; no worktree left behind.
      expect(files).toEqual(["README.md", "greet.js", "greet.test.js"]);
      expect(report.workspace).toMatchObject({ isolation: "worktree", applied: true });
      // The dead run's slots were taken over by the resumed run, then kept free for the next.
      expect(worktrees).toEqual({ outside: [], held: [] });
      // What the resumed session started (tests is cut off once by the demo, so retried): the
      // planning kill's whole plan; the interrupted attempt again under the next number; after the
      // evaluation kill, only the sub-tasks that follow.
      expect(startedAfter.sort()).toEqual(
        {
          planning: ["docs#1", "library#1", "tests#1", "tests#2"],
          "mid-attempt": ["docs#1", "library#2", "tests#1", "tests#2"],
          "before-evaluation": ["docs#1", "tests#1", "tests#2"],
        }[point],
      );
      if (point === "mid-attempt") {
        // Resumed on the executor the killed session logged (a run's default, the server one),
        // and every process either session recorded is gone: the killed manager's server too.
        const executors = new Set(
          after.flatMap((r) => (r.type === "attempt-finished" ? [r.result.details?.executor] : [])),
        );
        expect(executors).toEqual(new Set(["opencode-server"]));
        const recorded = after.flatMap((r) => (r.type === "attempt-process" ? [r] : []));
        expect(recorded.length).toBeGreaterThan(0);
        for (const process of recorded)
          expect(processStartTime(process.pid)).not.toBe(process.startTime);
      }
      if (point === "before-evaluation") {
        // The finished attempt was judged after the restart, not run again.
        expect(
          after
            .slice(resumedAt)
            .filter((r) => r.type === "sub-task-evaluated")
            .map((r) => r.type === "sub-task-evaluated" && `${r.subTaskId}#${r.attempt}`),
        ).toContain("library#1");
      }
    }, 240_000);
  }
});

describe.runIf(process.platform === "linux")(
  "kill -9 of the manager and its watchdog the moment an agent's tool starts",
  () => {
    it("resume stops the tool by its attempt's TMPDIR before going on: nothing runs once it is done", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { root, cwd, store } = await runDirectories("taskledger-kill-tool-");
      // Attempt directories, so every attempt's marker, under `root`.
      await mkdir(join(root, "tmp"));
      const plan = {
        subTasks: [
          {
            id: "wait",
            title: "Wait",
            description: "Wait",
            successCriteria: ["waited"],
            dependsOn: [],
            checks: [],
          },
        ],
      };
      let agentCalls = 0;
      const server = await createModelServer({
        replies: scriptByRole({
          plan: { text: JSON.stringify(plan) },
          judge: completedJudge("ok"),
          // The first attempt's tool runs 45 s; the resumed attempt just answers.
          agent: () =>
            ++agentCalls === 1
              ? bashCall("echo started > started.txt; sleep 45; echo bye > bye.txt", "wait")
              : { text: "Done." },
        }),
      });
      const env = { ...process.env, CI: "true", TMPDIR: join(root, "tmp") };
      const args = [...agentArgs(server.openaiBaseURL), "--store", store, "--cwd", cwd, "--json"];
      // Unconfined: inside the OS sandbox the tool dies with its room (sandbox-run.test.ts); here
      // only the resume's search by the attempt's TMPDIR can find it.
      const first = spawn(
        process.execPath,
        [builtCli, "run", "Wait a while", "--yes", "--sandbox", "off", ...args],
        {
          env,
          stdio: "ignore",
        },
      );
      const exited = new Promise<NodeJS.Signals | null>((r) => first.on("exit", (_, s) => r(s)));
      const watcher = watch(cwd);
      const started = new Promise<void>((r) =>
        watcher.on("change", (_, name) => {
          if (name !== "started.txt") return;
          watcher.close();
          // The watchdog first (a watchdog that died too), then the manager.
          for (const pid of processesWithCommand(root, "watchdog-process"))
            process.kill(pid, "SIGKILL");
          process.kill(first.pid as number, "SIGKILL");
          r();
        }),
      );
      try {
        await started;
        expect(await exited).toBe("SIGKILL");
        // The tool outlived both: what only a resume can stop now.
        expect(processesWithCommand(root, "sleep 45").length).toBeGreaterThan(0);
        const [file] = await readdir(store);
        const runId = (file as string).replace(/\.jsonl$/, "");
        // Not spawnSync: the model server answers from this process.
        const second = spawnCli(["resume", runId, "--store", store, "--json"], {
          TMPDIR: env.TMPDIR,
        });
        const resumed = await second.exit;
        expect(resumed.code, resumed.stderr).toBe(0);
        expect((JSON.parse(resumed.stdout) as JsonReport).status).toBe("completed");
        const left = await processesUnder(root);
        expect(left.map((pid) => `${pid} ${commandLine(pid)}`)).toEqual([]);
      } finally {
        watcher.close();
        if (first.exitCode === null && first.signalCode === null) first.kill("SIGKILL");
        await server.close();
        await killProcessesUnder(root);
        await rm(root, { recursive: true, force: true });
      }
    }, 120_000);
  },
);

/** A process's command line, its arguments joined by spaces ("" once it is gone). */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

/** The live processes under `root` whose command line contains `text`. */
function processesWithCommand(root: string, text: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    if (!commandLine(Number(name)).includes(text)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, "utf8");
      if (environ.includes(root)) pids.push(Number(name));
    } catch {
      // Gone.
    }
  }
  return pids;
}
