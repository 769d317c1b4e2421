// Dispatch → the agent's first model request, as a user gets it: the built CLI (`taskledger run`
// in a process of its own, as in a terminal), with and without the per-user daemon that keeps each
// kept slot's opencode server running between runs. The repository of bench/fast-path.ts (10,000
// tracked files, a 20,000-file ignored node_modules); a planner that thinks 2 s. Per mode and
// concurrency: a first run on a new repository (nothing warm: in daemon mode, no daemon), then a
// second one on it. Needs `npm run build` (packages/cli/dist).
import { execFileSync, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { join, resolve } from "node:path";
import type { RunEvent } from "@taskledger/core";
import {
  createModelServer,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  subTaskOf,
  tempDirectory,
} from "@taskledger/testing";
import { project } from "./fast-path.ts";

export interface DaemonWarmRow {
  mode: "no-daemon" | "daemon";
  run: "first" | "second";
  concurrency: number;
  /** Dispatch (the run log's `sub-task-started`) → the model server receiving the first request, ms. */
  p50Ms: number;
  maxMs: number;
  attempts: number;
  /** Daemon mode: servers the daemon started during this run (`daemon status --json`). */
  serverStarts?: number;
  /** Whether the run's agents ran inside the OS sandbox (the default, `--sandbox auto`). */
  confined: boolean;
  /** Slots the run prepared: new ones, and ones an earlier run kept (the run log's `slot-prepared`). */
  newSlots: number;
  reusedSlots: number;
  /** Daemon mode: the slot directories its attempts ran in that an earlier attempt of the daemon used. */
  warmRooms?: number;
  /**
   * Daemon mode, p50 of the part of the wait spent before the daemon has the attempt (the slot's
   * reset to its start commit, then the socket), ms; the rest is the agent's session opening.
   */
  toDaemonP50Ms?: number;
  wallMs: number;
}

/** The built CLI, whatever directory the bench is started from. */
export const builtCli = resolve(import.meta.dirname, "../packages/cli/dist/bin.js");

/**
 * The environment the CLI gets: this process's, without any TASKLEDGER_ setting (so the answer is
 * the same wherever the bench is started), with the bench's own cache directory.
 */
export function cliEnvironment(cacheDir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && !name.startsWith("TASKLEDGER_")) env[name] = value;
  env.TASKLEDGER_CACHE_DIR = cacheDir;
  // Should the bench be killed outright (its cache is removed otherwise, which stops its daemon).
  env.TASKLEDGER_DAEMON_IDLE = "300";
  return env;
}

/** A sub-task of the warm benches' plans: it asks for nothing. */
export interface WarmSubTask {
  id: string;
  title: string;
  description: string;
  successCriteria: string[];
}

/**
 * The scripted models of the warm benches: the planner plans `subTasks()` after thinking 2 s, the
 * judge passes, an agent says done at once, or `firstDelayMs()` later on its sub-task's first
 * request; that first request's time goes into `firstRequest`.
 */
export function warmReplies(
  subTasks: () => WarmSubTask[],
  firstRequest: Map<string, number>,
  firstDelayMs: () => number = () => 0,
): (request: RecordedRequest) => ScriptedReply {
  return (request) => {
    const role = roleOf(request);
    if (role === "plan") return { text: JSON.stringify({ subTasks: subTasks() }), delayMs: 2000 };
    if (role !== "agent")
      return {
        text: JSON.stringify({ completed: true, summary: "ok", outputData: "", feedback: "" }),
      };
    const id = subTaskOf(request);
    const first = id !== undefined && !firstRequest.has(id);
    if (first) firstRequest.set(id, Date.now());
    const delayMs = first ? firstDelayMs() : 0;
    return {
      text: "Done: nothing was needed for this step, it is complete.",
      ...(delayMs > 0 ? { delayMs } : {}),
    };
  };
}

export interface CliExit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI with `argv` to its end. */
export function runCli(argv: string[], env: Record<string, string>): Promise<CliExit> {
  const child = spawn(process.execPath, [builtCli, ...argv], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

interface DaemonStatus {
  pid: number;
  servers: number;
  serverStarts: number;
}

async function daemonStatus(env: Record<string, string>): Promise<DaemonStatus | undefined> {
  const exit = await runCli(["daemon", "status", "--json"], env);
  const status = JSON.parse(exit.stdout) as DaemonStatus | { running: false };
  return "pid" in status ? status : undefined;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? Number.NaN;
};

/** `sub-task-started` times (attempt 1) by sub-task, from the run log in `store` not in `seen`. */
function runLog(
  store: string,
  seen: Set<string>,
): {
  dispatched: Map<string, number>;
  confined: boolean;
  newSlots: number;
  reusedSlots: number;
} {
  const logs = readdirSync(store).filter((name) => name.endsWith(".jsonl") && !seen.has(name));
  if (logs.length !== 1)
    throw new Error(`expected one new run log in ${store}, found ${logs.length}`);
  seen.add(logs[0]!);
  const dispatched = new Map<string, number>();
  let confined = false;
  let newSlots = 0;
  let reusedSlots = 0;
  for (const line of readFileSync(join(store, logs[0]!), "utf8").split("\n")) {
    if (line === "") continue;
    const event = JSON.parse(line) as RunEvent;
    if (event.type === "sub-task-started" && event.attempt === 1)
      dispatched.set(event.subTaskId, Date.parse(event.time));
    if (event.type === "run-started") confined = event.sandbox?.confined === true;
    if (event.type === "slot-prepared") {
      if (event.preparation.reason === "reused") reusedSlots++;
      else newSlots++;
    }
  }
  return { dispatched, confined, newSlots, reusedSlots };
}

/**
 * How many of this run's attempts ran in a directory an earlier attempt of the daemon ran in
 * (its log says `attempt N of <sub-task> in <directory>`); the daemon log since it started.
 */
/** When the daemon received each sub-task's first attempt (its log's `attempt 1 of <id>` line). */
function daemonReceived(cacheDir: string): Map<string, number> {
  const log = readFileSync(join(cacheDir, "daemon.log"), "utf8");
  const received = new Map<string, number>();
  for (const [, time, id] of log.matchAll(/^(\S+) attempt 1 of (\S+) in /gm))
    received.set(id!, Date.parse(time!));
  return received;
}

function warmRooms(cacheDir: string, subTasks: { id: string }[]): number {
  const log = readFileSync(join(cacheDir, "daemon.log"), "utf8");
  const since = log.slice(log.lastIndexOf("listening on"));
  const ours = new Set(subTasks.map((s) => s.id));
  const seen = new Set<string>();
  let warm = 0;
  for (const [, id, dir] of since.matchAll(/attempt \d+ of (\S+) in (\S+)/g)) {
    if (ours.has(id!) && seen.has(dir!)) warm++;
    if (!ours.has(id!)) seen.add(dir!);
  }
  return warm;
}

/** A first run with the daemon against one without, at one concurrency, from the same bench run. */
export interface DaemonFirstRunRatio {
  concurrency: number;
  /** p50 dispatch → first request, daemon / no-daemon (1 or less: the daemon costs a first run nothing). */
  p50Ratio: number;
  /** The whole run, daemon / no-daemon. */
  wallRatio: number;
  daemonP50Ms: number;
  noDaemonP50Ms: number;
}

/** The first-run ratios of `rows`, per concurrency that has both modes. */
export function firstRunRatios(rows: readonly DaemonWarmRow[]): DaemonFirstRunRatio[] {
  const ratios: DaemonFirstRunRatio[] = [];
  for (const concurrency of new Set(rows.map((row) => row.concurrency))) {
    const first = (mode: DaemonWarmRow["mode"]) =>
      rows.find(
        (row) => row.run === "first" && row.mode === mode && row.concurrency === concurrency,
      );
    const daemon = first("daemon");
    const alone = first("no-daemon");
    if (daemon === undefined || alone === undefined) continue;
    ratios.push({
      concurrency,
      p50Ratio: Number((daemon.p50Ms / alone.p50Ms).toFixed(2)),
      wallRatio: Number((daemon.wallMs / alone.wallMs).toFixed(2)),
      daemonP50Ms: daemon.p50Ms,
      noDaemonP50Ms: alone.p50Ms,
    });
  }
  return ratios;
}

export async function benchDaemonWarm(
  tracked = 10_000,
  dependencies = 20_000,
  modes: readonly DaemonWarmRow["mode"][] = ["no-daemon", "daemon"],
  concurrencies: readonly number[] = [1, 4],
): Promise<DaemonWarmRow[]> {
  // Removed when the process ends, however it ends; removing the cache stops its daemon too.
  const benchDir = tempDirectory("taskledger-bench-daemon-");
  const cacheDir = join(benchDir, "cache");
  mkdirSync(cacheDir, { recursive: true });
  const env = cliEnvironment(cacheDir);
  const firstRequest = new Map<string, number>();
  let subTasks: WarmSubTask[] = [];
  let firstRun = false;
  const server = await createModelServer({
    replies: warmReplies(
      () => subTasks,
      firstRequest,
      // A first run's attempts last as real ones do, longer than a new slot takes to make: each
      // holds its own slot, so the run warms as many rooms as its concurrency (instant attempts
      // ran 4 sub-tasks in 2–3 slots, leaving the second run rooms to start).
      () => (firstRun ? 30_000 : 0),
    ),
  });
  const stop = () => runCli(["daemon", "stop"], env);
  const rows: DaemonWarmRow[] = [];
  let round = 0;
  try {
    // Each concurrency's modes one after the other: their first runs meet the same machine.
    for (const concurrency of concurrencies) {
      for (const mode of modes) {
        const repo = project(tracked, dependencies, benchDir);
        const logsSeen = new Set<string>();
        // A first run finds nothing warm: no daemon either.
        await stop();
        // Nor the disk still writing back the last pair's removed ~400 MB: the mode run after
        // another paid for its removal (its slots' copies 2-3x slower), whichever mode it was.
        execFileSync("sync");
        for (const run of ["first", "second"] as const) {
          round++;
          firstRun = run === "first";
          subTasks = Array.from({ length: concurrency }, (_, i) => ({
            id: `r${round}s${i}`,
            title: `Step ${i}`,
            description: "Say done.",
            successCriteria: ["done"],
          }));
          // One store for both runs, as a user's runs share theirs: the store is in the sandbox's
          // deny list, so a run with another store gets rooms of its own (docs/daemon.md).
          const store = join(benchDir, `store-${mode}-${concurrency}`);
          const before = mode === "daemon" ? await daemonStatus(env) : undefined;
          const started = Date.now();
          const exit = await runCli(
            [
              "run",
              // Two sentences: planned (a plainly one-step request would skip the planner).
              "Work through the planned steps. Each one only says done.",
              ...["--provider", "openai-compatible", "--model", "m"],
              ...["--base-url", server.openaiBaseURL],
              ...["--agent-model", "taskledger-compatible/m"],
              ...["--cwd", repo, "--store", store, "--concurrency", String(concurrency)],
              "--yes",
              "--json",
              ...(mode === "no-daemon" ? ["--no-daemon"] : []),
            ],
            env,
          );
          const wallMs = Date.now() - started;
          const status = (JSON.parse(exit.stdout || "{}") as { status?: string }).status;
          if (exit.code !== 0 || status !== "completed")
            throw new Error(
              `${mode} ${run} run at concurrency ${concurrency}: exit ${exit.code}, ${status}\n${exit.stderr}`,
            );
          const after = mode === "daemon" ? await daemonStatus(env) : undefined;
          if (mode === "daemon" && after === undefined)
            throw new Error(`no daemon after the ${run} run at concurrency ${concurrency}`);
          const { dispatched, confined, newSlots, reusedSlots } = runLog(store, logsSeen);
          const waits = [...dispatched].map(
            ([id, at]) => (firstRequest.get(id) ?? Number.NaN) - at,
          );
          rows.push({
            mode,
            run,
            concurrency,
            p50Ms: percentile(waits, 0.5),
            maxMs: Math.max(...waits),
            attempts: waits.length,
            ...(after
              ? {
                  serverStarts:
                    after.serverStarts - (before?.pid === after.pid ? before.serverStarts : 0),
                }
              : {}),
            confined,
            newSlots,
            reusedSlots,
            ...(mode === "daemon"
              ? {
                  warmRooms: warmRooms(cacheDir, subTasks),
                  toDaemonP50Ms: percentile(
                    [...dispatched].map(
                      ([id, at]) => (daemonReceived(cacheDir).get(id) ?? Number.NaN) - at,
                    ),
                    0.5,
                  ),
                }
              : {}),
            wallMs,
          });
          process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
          // A second run should start no server: what the daemon did is then worth reading.
          if (run === "second" && (rows.at(-1)?.serverStarts ?? 0) > 0)
            process.stderr.write(readFileSync(join(cacheDir, "daemon.log"), "utf8"));
        }
        // Its 10,000-file repository, node_modules and kept slots go before the next (~400 MB).
        await stop();
        rmSync(repo, { recursive: true, force: true });
        rmSync(join(cacheDir, "slots"), { recursive: true, force: true });
      }
    }
  } finally {
    await stop();
    await server.close();
    for (const entry of existsSync(benchDir) ? readdirSync(benchDir) : [])
      rmSync(join(benchDir, entry), { recursive: true, force: true });
  }
  return rows;
}

/** The daemon started as `entry` (its command after `node`): spawn → listening, and its CPU by then. */
export interface DaemonStartRow {
  entry: string;
  listeningMs: number[];
  cpuMs: number[];
  p50ListeningMs: number;
  p50CpuMs: number;
}

/**
 * The daemon's own start, what a first run may wait for: the whole CLI's `daemon serve` against
 * the service's entry (runtime/daemon-serve.js), alternately, `rounds` times each, in new cache
 * directories. Linux (the CPU is read from /proc).
 */
export async function benchDaemonStart(rounds = 5): Promise<DaemonStartRow[]> {
  const entries: Record<string, string[]> = {
    "bin.js daemon serve": [builtCli, "daemon", "serve", "--idle", "60"],
    "runtime/daemon-serve.js": [resolve(builtCli, "../runtime/daemon-serve.js"), "--idle", "60"],
  };
  const seen = new Map<string, { ms: number[]; cpu: number[] }>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, args] of Object.entries(entries)) {
      const cacheDir = tempDirectory("taskledger-bench-start-");
      const log = join(cacheDir, "daemon.log");
      const out = openSync(log, "a");
      const started = performance.now();
      const child = spawn(process.execPath, args, {
        env: { ...cliEnvironment(cacheDir) },
        stdio: ["ignore", out, out],
        cwd: cacheDir,
      });
      closeSync(out);
      while (!readFileSync(log, "utf8").includes("listening on")) {
        if (child.exitCode !== null) throw new Error(`${name} ended: ${readFileSync(log, "utf8")}`);
        await new Promise((done) => setTimeout(done, 10));
      }
      const ms = performance.now() - started;
      const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime and stime, in clock ticks of 10 ms.
      const cpu = (Number(fields[11]) + Number(fields[12])) * 10;
      child.kill("SIGTERM");
      await new Promise((done) => child.once("exit", done));
      rmSync(cacheDir, { recursive: true, force: true });
      const row = seen.get(name) ?? { ms: [], cpu: [] };
      row.ms.push(Math.round(ms));
      row.cpu.push(cpu);
      seen.set(name, row);
    }
  }
  return [...seen].map(([entry, { ms, cpu }]) => ({
    entry,
    listeningMs: ms,
    cpuMs: cpu,
    p50ListeningMs: percentile(ms, 0.5),
    p50CpuMs: percentile(cpu, 0.5),
  }));
}

// `node bench/daemon-warm.ts [tracked] [dependencies] [modes, e.g. daemon] [concurrencies, e.g. 4]`,
// or `node bench/daemon-warm.ts start [rounds]` for the daemon's own start alone.
if (import.meta.main && process.argv[2] === "start") {
  for (const row of await benchDaemonStart(Number(process.argv[3]) || undefined))
    process.stdout.write(`${JSON.stringify(row)}\n`);
} else if (import.meta.main) {
  const [tracked, dependencies, modes, concurrencies] = process.argv.slice(2);
  const rows = await benchDaemonWarm(
    Number(tracked) || undefined,
    Number(dependencies) || undefined,
    modes ? (modes.split(",") as DaemonWarmRow["mode"][]) : undefined,
    concurrencies ? concurrencies.split(",").map(Number) : undefined,
  );
  for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
  for (const ratio of firstRunRatios(rows))
    process.stdout.write(`${JSON.stringify({ firstRun: "daemon / no-daemon", ...ratio })}\n`);
}
