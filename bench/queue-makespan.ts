// Attempts through the queue: makespan of 16 independent sub-tasks on 1, 2 and 4 workers against
// the critical path, and the queue's own cost per attempt (git push + Redis + fetch, both ways).
// The agent is a fake that sleeps: on one machine more workers add no cores, so this shows how
// the queue would scale with real machines, not what opencode does here.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type AttemptResult,
  createManager,
  type ExecuteOptions,
  type Executor,
  emptyUsage,
} from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { type AttemptWorker, createQueueExecutor, startAttemptWorker } from "@taskledger/queue";
import {
  abortableDelay,
  afterToolResult,
  createModelServer,
  startRedisServer,
  subTaskOf,
  tempDirectory,
} from "@taskledger/testing";

const bin = join(import.meta.dirname, "../packages/cli/dist/bin.js");

export interface QueueMakespanRow {
  workers: number;
  /** Where the workers ran: in the bench's own process, or each in a process of its own. */
  workerProcesses: "bench" | "own";
  subTasks: number;
  attemptMs: number;
  /** The median over `runsMs`. */
  makespanMs: number;
  /** Every run's makespan: the 4-worker rows run five times, their spread (±60 ms) near the goal. */
  runsMs: number[];
  /** The bound with this many workers: ceil(sub-tasks / workers) attempts one after another. */
  boundMs: number;
  /** Git processes per attempt, the run's own included (workers in the bench's process only). */
  gitPerAttempt?: { spawned: number; all: number };
}

export interface QueueOverheadRow {
  attempts: number;
  attemptMs: number;
  enqueueToStartMs: number;
  finishToResultMs: number;
  /** Git processes per attempt, the run's own included: the ones Node spawned, and with theirs. */
  gitPerAttempt: { spawned: number; all: number };
}

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, stdio: "ignore" });

function repository() {
  const root = tempDirectory("taskledger-bench-queue-");
  const repo = join(root, "repo");
  const remote = join(root, "remote.git");
  git(root, "init", "-q", "-b", "main", repo);
  git(root, "init", "-q", "--bare", remote);
  writeFileSync(join(repo, "README.md"), "bench\n");
  git(repo, "add", "-A");
  git(repo, "-c", "user.name=B", "-c", "user.email=b@example.test", "commit", "-qm", "init");
  return { root, repo, remote };
}

/** Sleeps `attemptMs`, writes `<id>.txt`, and notes when it started and ended. */
export function sleepingExecutor(
  attemptMs: number,
  marks: Map<string, { start: number; end: number }>,
) {
  const executor: Executor = {
    async run(_prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
      const start = performance.now();
      await abortableDelay(attemptMs, options.abortSignal);
      await writeFile(join(options.cwd, `${options.subTask.id}.txt`), "done\n");
      marks.set(options.subTask.id, { start, end: performance.now() });
      return {
        outcome: "finished",
        finalText: "done",
        toolCalls: [],
        stepFinishReasons: ["stop"],
        filesChanged: [],
        usage: emptyUsage(),
        durationMs: attemptMs,
      };
    },
  };
  return executor;
}

const plan = (n: number) => ({
  subTasks: Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    title: `s${i}`,
    description: `s${i}`,
    successCriteria: ["done"],
    dependsOn: [],
  })),
});

/** One run through the queue; returns its makespan and, per sub-task, when the run sent it off. */
async function runThroughQueue(
  redis: string,
  workers: number,
  subTasks: number,
  attemptMs: number,
  concurrency: number,
  gitTrace?: string,
  ownProcesses = false,
) {
  const { root, repo, remote } = repository();
  // Git's own trace (one JSON line per event, each process's `start` among them) counts processes.
  if (gitTrace) process.env[gitTraceVariable] = gitTrace;
  const marks = new Map<string, { start: number; end: number }>();
  const queueName = `bench-${workers}-${subTasks}-${concurrency}-${Date.now()}`;
  const started: AttemptWorker[] = [];
  for (let i = 0; i < workers; i++) {
    const workDir = join(root, `w${i}`);
    started.push(
      ownProcesses
        ? await workerProcess(redis, queueName, workDir, attemptMs)
        : await startAttemptWorker({
            redis,
            queueName,
            executor: sleepingExecutor(attemptMs, marks),
            workDir,
          }),
    );
  }
  const queue = createQueueExecutor({ redis, remote, queueName });
  const sent = new Map<string, { sent: number; returned: number }>();
  const timed: Executor = {
    async run(prompt, options) {
      const at = performance.now();
      const result = await queue.run(prompt, options);
      sent.set(options.subTask.id, { sent: at, returned: performance.now() });
      return result;
    },
  };
  try {
    const manager = createManager({
      executor: timed,
      concurrency,
      maxSubTasks: 100,
      cwd: repo,
      isolation: "worktree",
      workspaces: gitWorkspaces(),
      apply: false,
    });
    const t0 = performance.now();
    const report = await manager.run("bench", { plan: plan(subTasks) });
    const makespanMs = performance.now() - t0;
    if (report.status !== "completed") throw new Error(`queue bench: ${report.status}`);
    return { makespanMs, marks, sent };
  } finally {
    delete process.env[gitTraceVariable];
    await queue.close();
    await Promise.all(started.map((worker) => worker.close()));
    rmSync(root, { recursive: true, force: true });
  }
}

// Read by git itself, for the bench's own count only: no task's output depends on it.
const gitTraceVariable = "GIT_TRACE2_EVENT";

/** A worker in a process of its own; closing it is Ctrl-C and its exit. */
async function workerProcess(
  redis: string,
  queueName: string,
  workDir: string,
  attemptMs: number,
): Promise<AttemptWorker> {
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, "queue-sleeping-worker.ts"),
      redis,
      queueName,
      workDir,
      `${attemptMs}`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = once(child, "exit");
  await new Promise<void>((ready, failed) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) ready();
    });
    void exited.then(() => failed(new Error("a bench worker exited before it was ready")));
  });
  return {
    async close() {
      child.kill("SIGINT");
      await exited;
    },
  };
}

/** Git processes a trace file saw start: those Node spawned (a top-level session id), and all. */
function gitProcesses(trace: string): { spawned: number; all: number } {
  let spawned = 0;
  let all = 0;
  for (const line of readFileSync(trace, "utf8").split("\n")) {
    if (!line.includes('"event":"start"')) continue;
    all++;
    if (!(JSON.parse(line) as { sid: string }).sid.includes("/")) spawned++;
  }
  return { spawned, all };
}

export async function benchQueue(attemptMs = 1000): Promise<{
  makespan: QueueMakespanRow[];
  overhead: QueueOverheadRow;
}> {
  const redis = await startRedisServer();
  try {
    const makespan: QueueMakespanRow[] = [];
    for (const [workers, own] of [
      [1, false],
      [2, false],
      [4, false],
      [4, true],
    ] as const) {
      // Workers of their own would need the trace in their environment: counted in-process only.
      const trace = own
        ? undefined
        : join(tempDirectory("taskledger-bench-git-trace-"), "events.json");
      const runsMs: number[] = [];
      for (let run = 0; run < (workers === 4 ? 5 : 1); run++) {
        // Git's trace in the first run only: it counts, the others time.
        const { makespanMs } = await runThroughQueue(
          redis.url,
          workers,
          16,
          attemptMs,
          16,
          run === 0 ? trace : undefined,
          own,
        );
        runsMs.push(Math.round(makespanMs));
      }
      const git = trace ? gitProcesses(trace) : undefined;
      makespan.push({
        workers,
        workerProcesses: own ? "own" : "bench",
        subTasks: 16,
        attemptMs,
        makespanMs: [...runsMs].sort((a, b) => a - b)[Math.floor(runsMs.length / 2)]!,
        runsMs,
        boundMs: Math.ceil(16 / workers) * attemptMs,
        ...(git
          ? {
              gitPerAttempt: {
                spawned: Math.round(git.spawned / 16),
                all: Math.round(git.all / 16),
              },
            }
          : {}),
      });
    }
    // One attempt at a time on one idle worker: what is left beside the attempt is the queue's.
    const trace = join(tempDirectory("taskledger-bench-git-trace-"), "events.json");
    const { marks, sent } = await runThroughQueue(redis.url, 1, 8, attemptMs, 1, trace);
    const git = gitProcesses(trace);
    let toStart = 0;
    let toResult = 0;
    for (const [id, mark] of marks) {
      const s = sent.get(id)!;
      toStart += mark.start - s.sent;
      toResult += s.returned - mark.end;
    }
    return {
      makespan,
      overhead: {
        attempts: marks.size,
        attemptMs,
        enqueueToStartMs: Math.round(toStart / marks.size),
        finishToResultMs: Math.round(toResult / marks.size),
        gitPerAttempt: {
          spawned: Math.round(git.spawned / marks.size),
          all: Math.round(git.all / marks.size),
        },
      },
    };
  } finally {
    await redis.stop();
  }
}

export interface OpencodeQueueRow {
  workers: number;
  subTasks: number;
  makespanMs: number;
  /** The longest attempt: the bound with unlimited workers (and cores). */
  criticalPathMs: number;
  meanAttemptMs: number;
}

/** The same plan with real opencode in real `taskledger worker` processes (2 cores shared by all). */
export async function benchQueueOpencode(workerCounts = [1, 2, 4], subTasks = 16) {
  const redis = await startRedisServer();
  const rows: OpencodeQueueRow[] = [];
  try {
    for (const workers of workerCounts) {
      const { root, repo, remote } = repository();
      const server = await createModelServer({
        replies: (request) => {
          const id = subTaskOf(request) ?? "x";
          if (afterToolResult(request)) return { text: `Done with ${id}.` };
          return {
            toolCalls: [{ name: "write", arguments: { filePath: `${id}.txt`, content: "done\n" } }],
          };
        },
      });
      const children = Array.from({ length: workers }, (_, i) =>
        spawn(
          process.execPath,
          [
            bin,
            "worker",
            "--redis",
            redis.url,
            "--provider",
            "openai-compatible",
            "--base-url",
            server.openaiBaseURL,
            "--agent-model",
            "taskledger-compatible/agent",
            "--work-dir",
            join(root, `w${i}`),
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        ),
      );
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((done) => {
              let log = "";
              child.stderr.on("data", (chunk) => {
                log += chunk;
                if (log.includes("taking attempts")) done();
              });
            }),
        ),
      );
      const queue = createQueueExecutor({
        redis: redis.url,
        remote,
        agentModel: "taskledger-compatible/agent",
      });
      try {
        const manager = createManager({
          executor: queue,
          concurrency: subTasks,
          maxSubTasks: 100,
          cwd: repo,
          isolation: "worktree",
          workspaces: gitWorkspaces(),
          apply: false,
        });
        const t0 = performance.now();
        const run = manager.start("bench", { plan: plan(subTasks) });
        const durations: number[] = [];
        run.on("attempt-finished", (event) => durations.push(event.result.durationMs));
        const report = await run.result;
        const makespanMs = performance.now() - t0;
        if (report.status !== "completed")
          throw new Error(`opencode queue bench: ${report.status}`);
        rows.push({
          workers,
          subTasks,
          makespanMs: Math.round(makespanMs),
          criticalPathMs: Math.round(Math.max(...durations)),
          meanAttemptMs: Math.round(durations.reduce((a, b) => a + b, 0) / durations.length),
        });
      } finally {
        await queue.close();
        for (const child of children) child.kill("SIGINT");
        await Promise.all(children.map((child) => once(child, "exit")));
        await server.close();
        rmSync(root, { recursive: true, force: true });
      }
    }
    return rows;
  } finally {
    await redis.stop();
  }
}

// `node bench/queue-makespan.ts [fake|opencode]`: one part alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] !== "opencode") console.dir(await benchQueue(), { depth: null });
  if (process.argv[2] !== "fake") console.log(await benchQueueOpencode());
}
