// Real `taskledger worker` processes for the CLI's queue tests.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import {
  commandLineOf,
  createModelServer,
  type ModelServer,
  type ModelServerOptions,
  type RedisServer,
} from "@taskledger/testing";
import { afterEach } from "vitest";
// The queue's own fixtures, shared here rather than copied.
import { redisForTests } from "../../../queue/src/test-support/queue-fixtures.js";
import { compatibleProviderId } from "../runtime/runtime.js";
import { builtCli, codexAgentArgs, runOn } from "./cli-harness.js";

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  workDir: string;
  /** What it printed on stderr so far: a line per job started and finished. */
  log(): string;
  /** Resolves when its log holds `text`. */
  waitFor(text: string): Promise<void>;
  /** Ctrl-C, then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Starts a built `taskledger worker` against `redis` whose agents talk to `baseURL`: opencode on
 * model `agent` of its OpenAI-compatible face, or with `agent` `"codex"` Codex on model `agent` of
 * its Responses face, with `codexEnv`'s key (a job's agent is the one its run names, `codex:agent`
 * from `codexArgs`; the worker gives it where to send its calls and the key).
 */
export async function startWorker(
  redis: string,
  baseURL: string,
  workDir: string,
  extra: string[] = [],
  agent: "opencode" | "codex" = "opencode",
): Promise<WorkerProcess> {
  const agentFlags =
    agent === "codex"
      ? codexAgentArgs(baseURL)
      : ["--agent-model", `${compatibleProviderId}/agent`];
  const child = spawn(
    process.execPath,
    [
      builtCli,
      "worker",
      "--redis",
      redis,
      "--provider",
      "openai-compatible",
      "--base-url",
      baseURL,
      ...agentFlags,
      "--work-dir",
      workDir,
      ...extra,
    ],
    {
      env: { ...process.env, CI: "true", ...runOn(agent).env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let log = "";
  const waiters: { text: string; done: () => void }[] = [];
  child.stderr?.on("data", (chunk) => {
    log += chunk;
    for (const waiter of [...waiters]) {
      if (log.includes(waiter.text)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    }
  });
  const exited = once(child, "exit");
  const waitFor = (text: string) =>
    log.includes(text)
      ? Promise.resolve()
      : new Promise<void>((done, fail) => {
          waiters.push({ text, done });
          exited.then(() => fail(new Error(`worker exited before "${text}":\n${log}`)));
        });
  await waitFor("taking attempts from");
  return {
    child,
    pid: child.pid!,
    workDir,
    log: () => log,
    waitFor,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGINT");
      await exited;
    },
  };
}

/** Each process's parent, from /proc. */
function parentsNow(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command may hold spaces and parentheses: the fields after its closing one are fixed.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Ended while listed.
    }
  }
  return parents;
}

/**
 * The `opencode serve` processes a worker runs now, each counted once: a server's own helpers
 * (opencode's launcher and what it forks carry the same command line) are not another server.
 */
export function serversOf(worker: Pick<WorkerProcess, "pid">): number[] {
  const parents = parentsNow();
  const serving = new Set<number>();
  const under = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at))
      if (at === worker.pid) return true;
    return false;
  };
  for (const pid of parents.keys())
    if (under(pid) && /\bopencode\b.*\bserve\b/.test(commandLineOf(pid))) serving.add(pid);
  return [...serving].filter((pid) => !serving.has(parents.get(pid) ?? 0));
}

/** Set for a describe's tests: see `queueTestBed`. */
export interface QueueTestBed {
  /** One Redis for all the describe's tests. */
  readonly redis: RedisServer;
  /** The workers a test started: stopped after it. */
  workers: WorkerProcess[];
  /** The model server the running test started with `serve`. */
  server: ModelServer | undefined;
  /** Starts the test's model server, closed after it once its workers stopped. */
  serve(options: ModelServerOptions): Promise<ModelServer>;
}

/** The hooks of a describe of queue tests: a Redis for them all, workers and a server for each. */
export function queueTestBed(): QueueTestBed {
  const redis = redisForTests();
  const bed: QueueTestBed = {
    get redis() {
      return redis();
    },
    workers: [],
    server: undefined,
    async serve(options) {
      bed.server = await createModelServer(options);
      return bed.server;
    },
  };
  afterEach(async () => {
    await Promise.all(bed.workers.splice(0).map((worker) => worker.stop()));
    await bed.server?.close();
    bed.server = undefined;
  });
  return bed;
}
