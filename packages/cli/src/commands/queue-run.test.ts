import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunEvent } from "@taskledger/core";
import {
  afterToolResult,
  alive,
  gitIn,
  pollUntil,
  type RecordedRequest,
  redisTestsEnabled,
  roleOf,
  type ScriptedReply,
  scriptByRole,
  startRedisServer,
  subTaskOf,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
// The queue's own fixtures, shared here rather than copied.
import { repositoryWithRemote } from "../../../queue/src/test-support/queue-fixtures.js";
import { runCli } from "../cli.js";
import type { JsonReport } from "../output/json-report.js";
import {
  agentArgs,
  builtCli,
  captureIo,
  codexArgs,
  codexEnv,
  compatibleArgs,
  processesUnder,
  spawnCli,
  useCodexKey,
} from "../test-support/cli-harness.js";
import { queueTestBed, serversOf, startWorker } from "../test-support/queue-workers.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

const enabled = redisTestsEnabled();

// The agent is not the subject here but for the warm opencode server a killed worker must not
// leave: the runs' attempts go to Codex on the workers, far cheaper to start than opencode.
type Agent = "opencode" | "codex";
useCodexKey();

const git = gitIn;

const step = (id: string) => ({
  id,
  title: `Write ${id}.txt`,
  description: `Write ${id}.txt`,
  successCriteria: [`${id}.txt exists`],
  dependsOn: [],
  checks: [{ type: "file-exists", path: `${id}.txt` }],
});

/** A repository with one commit, a bare repository as the shared remote, a store. */
function setUp(ids: string[]) {
  const { root, repo, remote } = repositoryWithRemote("taskledger-queue-run-", {
    "README.md": "hello\n",
  });
  const plan = { subTasks: ids.map(step) };
  return { root, repo, remote, store: join(root, "store"), plan };
}

/**
 * The planner answers `plan`, the judge says done, an agent (`agent`, with its own tool) writes
 * `<id>.txt` (or `hold` says otherwise).
 */
function replies(
  plan: unknown,
  hold?: (id: string, request: Parameters<typeof subTaskOf>[0]) => boolean,
  agent: Agent = "codex",
) {
  return scriptByRole({
    plan: { text: JSON.stringify(plan) },
    judge: (request) => completedJudge(`Did ${subTaskOf(request)}.`),
    agent: (request) => {
      const id = subTaskOf(request) ?? "";
      if (afterToolResult(request)) return { text: `Done with ${id}.` };
      if (hold?.(id, request)) return { hang: true };
      return writeCall(`${id}.txt`, `${id}\n`, agent);
    },
  });
}

/** `reply` (a scripted function resolved for `request`) sent `ms` later. */
function delayed(
  reply: ScriptedReply | undefined,
  request: RecordedRequest,
  ms: number,
): ScriptedReply | undefined {
  let resolved = reply;
  while (typeof resolved === "function") resolved = resolved(request);
  return resolved && { ...resolved, delayMs: ms };
}

/** The run's `attempt-finished` records, in order. */
function attemptsFinished(store: string) {
  return logOf(store).flatMap((event) => (event.type === "attempt-finished" ? [event] : []));
}

function logOf(store: string): RunEvent[] {
  const [file] = readdirSync(store);
  return readFileSync(join(store, file!), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);
}

describe.runIf(enabled && process.platform === "linux")(
  "taskledger run --redis with `taskledger worker`s (real Redis, real Codex and opencode, real git)",
  () => {
    const bed = queueTestBed();
    const { workers } = bed;

    const run = async (
      setup: ReturnType<typeof setUp>,
      signal = new AbortController().signal,
      extra: string[] = [],
      agent: Agent = "codex",
    ) => {
      const t = captureIo({ signal });
      const code = await runCli(
        [
          "run",
          "Write the files",
          "--yes",
          "--json",
          ...(agent === "codex" ? codexArgs : agentArgs)(bed.server!.openaiBaseURL),
          "--cwd",
          setup.repo,
          "--store",
          setup.store,
          "--concurrency",
          "4",
          "--redis",
          bed.redis.url,
          "--remote",
          setup.remote,
          ...extra,
        ],
        t.io,
      );
      return { code, t };
    };

    it("a 4-sub-task run on 2 workers ends with the tree a local run makes, every attempt run by a worker", async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const ids = ["a", "b", "c", "d"];
      const setup = setUp(ids);
      const server = await bed.serve({ replies: replies(setup.plan) });
      for (const name of ["w1", "w2"])
        workers.push(
          await startWorker(
            bed.redis.url,
            server.openaiBaseURL,
            join(setup.root, name),
            [],
            "codex",
          ),
        );
      const { code, t } = await run(setup);
      expect(code, t.err()).toBe(0);
      const report = JSON.parse(t.out()) as JsonReport;
      expect(report.status).toBe("completed");
      for (const id of ids)
        expect(readFileSync(join(setup.repo, `${id}.txt`), "utf8")).toBe(`${id}\n`);
      expect(git(setup.repo, "status", "--porcelain", "-uall")).toBe(
        "?? a.txt\n?? b.txt\n?? c.txt\n?? d.txt",
      );
      // Each attempt names the worker process that ran it; both workers took some.
      const ranBy = logOf(setup.store).flatMap((event) =>
        event.type === "attempt-finished"
          ? [(event.result.details?.worker as { pid: number } | undefined)?.pid]
          : [],
      );
      expect(ranBy).toHaveLength(4);
      const pids = workers.map((worker) => worker.pid);
      for (const pid of ranBy) expect(pids).toContain(pid);
      expect(new Set(ranBy).size).toBe(2);
      for (const worker of workers) expect(await processesUnder(worker.workDir)).toEqual([]);
    }, 180_000);

    it("kill -9 of the only worker mid-attempt: the coordinator's stalled check counts the attempt interrupted, and the next one runs on a worker started later, once", async () => {
      const setup = setUp(["a"]);
      let held: () => void = () => {};
      const holding = new Promise<void>((done) => {
        held = done;
      });
      let first = true;
      // On opencode: the warm server a worker keeps between jobs is the subject here.
      const server = await bed.serve({
        replies: replies(
          setup.plan,
          () => {
            if (!first) return false;
            first = false;
            held();
            return true;
          },
          "opencode",
        ),
      });
      const lock = ["--lock-duration", "2000"];
      const victim = await startWorker(
        bed.redis.url,
        server.openaiBaseURL,
        join(setup.root, "w1"),
        lock,
        "opencode",
      );
      workers.push(victim);
      const running = run(setup, undefined, ["--stalled-check", "1000"], "opencode");
      const early = await Promise.race([holding.then(() => undefined), running]);
      expect(early?.t.err()).toBeUndefined();
      // Its agent's server, kept warm between jobs, must not outlive it.
      const victimServers = serversOf(victim);
      expect(victimServers).toHaveLength(1);
      process.kill(victim.pid, "SIGKILL");
      // No worker is alive: only the coordinator can notice the dead one.
      const interrupted = await pollUntil(
        async () => (existsSync(setup.store) ? logOf(setup.store) : []),
        (log) => log.some((event) => event.type === "attempt-finished"),
        1200,
      );
      expect(interrupted.some((event) => event.type === "attempt-finished")).toBe(true);
      const survivor = await startWorker(
        bed.redis.url,
        server.openaiBaseURL,
        join(setup.root, "w2"),
        lock,
        "opencode",
      );
      workers.push(survivor);
      const { code, t } = await running;
      expect(code, t.err()).toBe(0);
      const finished = attemptsFinished(setup.store);
      expect(finished.map((event) => [event.attempt, event.result.outcome])).toEqual([
        [1, "error"],
        [2, "finished"],
      ]);
      expect(finished[0]!.result.error).toContain("interrupted on its worker");
      // The interrupted attempt holds nothing of the agent's: only attempt 2 is judged.
      expect(server.requests.filter((request) => roleOf(request) === "judge")).toHaveLength(1);
      expect(finished[1]!.result.details?.worker).toMatchObject({ pid: survivor.pid });
      expect(survivor.log()).not.toMatch(/\.a\.1\b/);
      expect(survivor.log().match(/^started /gm)).toHaveLength(1);
      expect(readFileSync(join(setup.repo, "a.txt"), "utf8")).toBe("a\n");
      // The dead worker's agent is stopped by its own watchdog.
      expect(
        await pollUntil(
          () => processesUnder(victim.workDir),
          (left) => left.length === 0,
        ),
      ).toEqual([]);
      expect(
        await pollUntil(
          async () => victimServers.filter(alive),
          (left) => left.length === 0,
        ),
      ).toEqual([]);
    }, 180_000);

    it("a worker with --concurrency 2 runs two attempts at once, and a Redis restart with persistence mid-attempt loses nothing", async () => {
      const setup = setUp(["a", "b"]);
      const persistent = await startRedisServer({ persistent: true });
      try {
        let waiting = 2;
        let restarted: Promise<void> | undefined;
        const server = await bed.serve({
          replies: (request) => {
            if (roleOf(request) === "agent" && !afterToolResult(request) && --waiting === 0)
              restarted = persistent.restart();
            const reply = replies(setup.plan)(request);
            // Both agents wait on the model while Redis goes down and comes back.
            return roleOf(request) === "agent" && !afterToolResult(request)
              ? delayed(reply, request, 2500)
              : reply;
          },
        });
        const worker = await startWorker(
          persistent.url,
          server.openaiBaseURL,
          join(setup.root, "w1"),
          ["--concurrency", "2"],
          "codex",
        );
        workers.push(worker);
        const { code, t } = await run(setup, undefined, ["--redis", persistent.url]);
        expect(code, t.err()).toBe(0);
        expect(restarted).toBeDefined();
        await restarted;
        expect((JSON.parse(t.out()) as JsonReport).status).toBe("completed");
        // One attempt each: a second means the first was lost (its error says how).
        const finished = attemptsFinished(setup.store);
        expect(
          finished.map((event) => [event.attempt, event.result.outcome]),
          JSON.stringify(finished.map((event) => event.result.error ?? null)),
        ).toEqual([
          [1, "finished"],
          [1, "finished"],
        ]);
        // Both started before either finished: one worker ran them at once. The worker's last
        // line may reach this process's pipe after the result reached the run through Redis.
        const jobLines = async () =>
          worker
            .log()
            .match(/^(started|finished) \S+\.(a|b)\.1/gm)
            ?.map((line) => line.split(" ")[0]) ?? [];
        expect(await pollUntil(jobLines, (lines) => lines.length >= 4), worker.log()).toEqual([
          "started",
          "started",
          "finished",
          "finished",
        ]);
        for (const id of ["a", "b"])
          expect(readFileSync(join(setup.repo, `${id}.txt`), "utf8")).toBe(`${id}\n`);
      } finally {
        await Promise.all(workers.splice(0).map((worker) => worker.stop()));
        await persistent.stop();
      }
    }, 120_000);

    it("cancelling the run reaches the worker: the attempt's processes there are killed, the worker goes on", async () => {
      const setup = setUp(["a"]);
      const controller = new AbortController();
      const server = await bed.serve({
        replies: replies(setup.plan, () => {
          controller.abort();
          return true;
        }),
      });
      const worker = await startWorker(
        bed.redis.url,
        server.openaiBaseURL,
        join(setup.root, "w1"),
        [],
        "codex",
      );
      workers.push(worker);
      const { code, t } = await run(setup, controller.signal);
      expect(code, t.err()).toBe(130);
      const cancelled = /finished \S+\.a\.1: cancelled/;
      expect(
        await pollUntil(
          async () => worker.log(),
          (log) => cancelled.test(log),
        ),
      ).toMatch(cancelled);
      expect(await processesUnder(worker.workDir)).toEqual([]);
      expect(worker.child.exitCode).toBeNull();
    }, 120_000);

    it("with no worker running, a run of a given plan (--plan FILE, no planning call) fails after --worker-wait saying no worker took the attempt", async () => {
      const setup = setUp(["a"]);
      const server = await bed.serve({ replies: replies(setup.plan) });
      const planFile = join(setup.root, "plan.json");
      writeFileSync(planFile, JSON.stringify(setup.plan));
      const { code, t } = await run(setup, undefined, ["--worker-wait", "300", "--plan", planFile]);
      expect(code).toBe(1);
      expect((JSON.parse(t.out()) as JsonReport).status).toBe("failed");
      expect(t.err()).toMatch(/No worker took the attempt \(job \S+\.a\.1\)/);
      expect(t.err()).toContain(`taskledger worker --redis ${bed.redis.url}`);
      // The plan in the file ran as given: the model was never asked for one.
      expect(server.requests).toHaveLength(0);
    }, 60_000);

    it("an unreachable Redis ends the run with a queue error after --redis-timeout, and the process exits", async () => {
      const setup = setUp(["a"]);
      const server = await bed.serve({ replies: replies(setup.plan) });
      const closed = await startRedisServer();
      await closed.stop({ hard: true });
      const child = spawn(
        process.execPath,
        [
          builtCli,
          "run",
          "Write the files",
          "--yes",
          ...compatibleArgs(server.openaiBaseURL),
          "--cwd",
          setup.repo,
          "--redis",
          closed.url,
          "--remote",
          setup.remote,
          "--redis-timeout",
          "1000",
        ],
        { env: { ...process.env, CI: "true" }, stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      const [code] = (await once(child, "exit")) as [number | null];
      expect(code, stderr).toBe(1);
      expect(stderr).toContain(`Redis at ${closed.url} was unreachable for 1 s. [queue-error]`);
      expect(server.requests).toHaveLength(0);
    }, 60_000);

    it("kill -9 of the coordinator mid-attempt, then resume: the resumed run takes the attempt's result from its worker, run once", async () => {
      const setup = setUp(["a"]);
      let coordinator: ChildProcess | undefined;
      let agentCalls = 0;
      const server = await bed.serve({
        replies: (request) => {
          if (roleOf(request) === "agent" && !afterToolResult(request)) {
            agentCalls++;
            // The coordinator dies while the worker's agent waits on this answer.
            setImmediate(() => coordinator?.kill("SIGKILL"));
            return { ...writeCall("a.txt", "a\n", "codex"), delayMs: 2000 };
          }
          return replies(setup.plan)(request);
        },
      });
      const worker = await startWorker(
        bed.redis.url,
        server.openaiBaseURL,
        join(setup.root, "w1"),
        [],
        "codex",
      );
      workers.push(worker);
      const queueArgs = [
        "--redis",
        bed.redis.url,
        "--remote",
        setup.remote,
        "--store",
        setup.store,
      ];
      const first = spawnCli(
        [
          "run",
          "Write the files",
          "--yes",
          "--json",
          ...codexArgs(server.openaiBaseURL),
          "--cwd",
          setup.repo,
          ...queueArgs,
        ],
        codexEnv,
      );
      coordinator = first.child;
      expect((await first.exit).signal).toBe("SIGKILL");
      const runId = readdirSync(setup.store)[0]!.replace(/\.jsonl$/, "");
      const second = await spawnCli(["resume", runId, "--json", ...queueArgs], codexEnv).exit;
      expect(second.code, second.stderr).toBe(0);
      expect((JSON.parse(second.stdout) as JsonReport).status).toBe("completed");
      const log = logOf(setup.store);
      const started = log.filter((event) => event.type === "sub-task-started");
      const finished = log.flatMap((event) => (event.type === "attempt-finished" ? [event] : []));
      expect(started.map((event) => event.attempt)).toEqual([1]);
      expect(finished.map((event) => [event.attempt, event.result.outcome])).toEqual([
        [1, "finished"],
      ]);
      expect(finished[0]!.result.details?.worker).toMatchObject({ pid: worker.pid });
      expect(worker.log().match(/^started /gm)).toHaveLength(1);
      expect(agentCalls).toBe(1);
      expect(readFileSync(join(setup.repo, "a.txt"), "utf8")).toBe("a\n");
      expect(await processesUnder(worker.workDir)).toEqual([]);
    }, 180_000);

    // Last: it restarts the shared Redis.
    it("a Redis restart without persistence mid-attempt: the attempt ends interrupted, unjudged, and the next one completes", async () => {
      const setup = setUp(["a"]);
      let first = true;
      const server = await bed.serve({
        replies: (request) => {
          const reply = replies(setup.plan)(request);
          if (roleOf(request) !== "agent" || afterToolResult(request) || !first) return reply;
          first = false;
          void bed.redis.restart();
          return delayed(reply, request, 1500);
        },
      });
      const worker = await startWorker(
        bed.redis.url,
        server.openaiBaseURL,
        join(setup.root, "w1"),
        [],
        "codex",
      );
      workers.push(worker);
      const { code, t } = await run(setup);
      expect(code, t.err()).toBe(0);
      const finished = attemptsFinished(setup.store);
      expect(finished.map((event) => [event.attempt, event.result.outcome])).toEqual([
        [1, "error"],
        [2, "finished"],
      ]);
      expect(finished[0]!.result.error).toContain("Redis restarted and lost the job");
      expect(server.requests.filter((request) => roleOf(request) === "judge")).toHaveLength(1);
      expect(readFileSync(join(setup.repo, "a.txt"), "utf8")).toBe("a\n");
    }, 120_000);
  },
);
