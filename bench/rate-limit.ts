// A provider's rate limit (issue 49): what the provider governor costs and saves. A simulated
// provider refuses every request for W seconds from the first one it gets (Retry-After 2 s); a
// fake agent's attempt is a fixed number of model steps, each a request to it, and does what real
// agents do on a 429: a few retries honouring the Retry-After, then it ends `rate-limited` with
// the provider's `retryAfterMs`. The real core manager (createManager, the plan given, no model,
// shared workspace in a temporary directory) runs 2 × concurrency independent sub-tasks. Against
// it, a fixed fan-out that does not adapt, on the same simulated provider: each lane sends again
// every Retry-After until the window closes. Every time is multiplied by `--scale` (0.1 by
// default: W, the attempt, its steps and the Retry-After 10× shorter), so the ratios and counts
// compare across scales; the governor's jitter (Math.random, which it is given through
// createManager) is seeded for each run, and each figure is the median of `--reps` runs. A run
// with no event and no request for 20 steps' time is reported `hung` rather than waited for (its
// last sign of life kept); `--per-lane 1` runs one sub-task per lane instead of two.
import { parseArgs } from "node:util";
import {
  type AttemptResult,
  createManager,
  type ExecuteOptions,
  type Executor,
  type SubTaskInput,
} from "@taskledger/core";
import { tempDirectory } from "@taskledger/testing";

// The runs' directory: nothing is written there (shared workspace, in-memory store).
const benchDir = tempDirectory("taskledger-bench-rate-limit-");

/** Times at scale 1, in ms. */
export interface RateLimitShape {
  /** The agent's attempt: `steps` model steps of `stepMs` each. */
  steps: number;
  stepMs: number;
  /** What the provider's 429 asks for. */
  retryAfterMs: number;
  /** The agent's own retries of a refused request (each after the Retry-After) before it gives up. */
  agentRetries: number;
}

export const defaultShape: RateLimitShape = {
  steps: 15,
  stepMs: 2000,
  retryAfterMs: 2000,
  agentRetries: 2,
};

/** A provider that refuses every request for `windowMs` from the first it gets. */
class SimulatedProvider {
  private closesAt: number | undefined;
  rejected = 0;
  accepted = 0;
  onRequest: () => void = () => {};

  private readonly windowMs: number;
  readonly retryAfterMs: number;

  constructor(windowMs: number, retryAfterMs: number) {
    this.windowMs = windowMs;
    this.retryAfterMs = retryAfterMs;
  }

  /** Undefined when the request is served; else the Retry-After it answers with. */
  request(): number | undefined {
    const now = Date.now();
    this.onRequest();
    this.closesAt ??= now + this.windowMs;
    if (now < this.closesAt) {
      this.rejected++;
      return this.retryAfterMs;
    }
    this.accepted++;
    return undefined;
  }

  get windowEnd(): number | undefined {
    return this.closesAt;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One attempt as the agent saw it. */
interface AttemptTrace {
  start: number;
  end: number;
  /** Its first request was refused: sent while the window was open (a probe, after the first wave). */
  refusedFirst: boolean;
  limited: boolean;
}

/**
 * The fake agent: an attempt runs the sub-task's remaining model steps (work done before a limit
 * is kept, as a worktree keeps its commit), each a request to `provider`; a refused request is
 * tried again after the Retry-After up to `agentRetries` times, then the attempt ends
 * `rate-limited` with the provider's Retry-After.
 */
function limitedAgent(provider: SimulatedProvider, shape: RateLimitShape) {
  const done = new Map<string, number>();
  const attempts: AttemptTrace[] = [];
  const result = (outcome: AttemptResult["outcome"], started: number): AttemptResult => ({
    outcome,
    finalText: outcome === "finished" ? "done" : "",
    toolCalls: [],
    stepFinishReasons: outcome === "finished" ? ["stop"] : [],
    filesChanged: [],
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    durationMs: Date.now() - started,
  });
  const executor: Executor = {
    async run(_prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
      const id = options.subTask.id;
      const trace: AttemptTrace = {
        start: Date.now(),
        end: 0,
        refusedFirst: false,
        limited: false,
      };
      attempts.push(trace);
      const end = (r: AttemptResult) => {
        trace.end = Date.now();
        return r;
      };
      for (let step = done.get(id) ?? 0; step < shape.steps; step++) {
        for (let refusals = 0; ; refusals++) {
          if (options.abortSignal.aborted) return end(result("cancelled", trace.start));
          const retryAfterMs = provider.request();
          if (retryAfterMs === undefined) break;
          if (refusals === 0 && step === (done.get(id) ?? 0)) trace.refusedFirst = true;
          if (refusals >= shape.agentRetries) {
            trace.limited = true;
            return end({
              ...result("rate-limited", trace.start),
              error: "Rate limit reached for requests (status 429)",
              limit: {
                kind: "rate-limit",
                provider: "simulated",
                statusCode: 429,
                retryAfterMs,
                message: "Rate limit reached for requests",
              },
            });
          }
          await sleep(retryAfterMs);
        }
        await sleep(shape.stepMs);
        done.set(id, step + 1);
        options.onEvent?.({
          type: "step-finish",
          reason: step + 1 < shape.steps ? "tool-calls" : "stop",
        });
      }
      return end(result("finished", trace.start));
    },
  };
  return { executor, attempts };
}

/** Scales every time of `shape` by `scale`. */
function scaled(shape: RateLimitShape, scale: number): RateLimitShape {
  return {
    ...shape,
    stepMs: Math.round(shape.stepMs * scale),
    retryAfterMs: Math.round(shape.retryAfterMs * scale),
  };
}

/** A deterministic pseudo-random source (for the governor's jitter). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const independent = (n: number): SubTaskInput[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    title: `s${i}`,
    description: `sub-task ${i}`,
    successCriteria: ["done"],
    dependsOn: [],
  }));

/** One governed run: the manager's makespan and what the provider and the run's events saw. */
export interface GovernedRun {
  /** The run's wall time; when it hung, the time of its last sign of life. */
  makespanMs: number;
  /** The report's status, or `hung`: nothing happened for `idleMs` and the run never ended. */
  status: string;
  /** Requests the provider refused. */
  rejected: number;
  /** Attempts that ended `rate-limited`. */
  limitedAttempts: number;
  /** Pauses (backoff steps), overlapping ones counted once (as the report's `waits`). */
  pauses: number;
  /** Attempts started into the window after the first pause began. */
  probes: number;
  /** The most of those in flight at once. */
  probesAtOnce: number;
  /** From the window's end until `concurrency` attempts are at work (the ramp back). */
  rampMs: number | undefined;
}

/** How long after its start each run taken for stuck ended after all (none, when stuck for good). */
const lateEnds: number[] = [];

async function governedRun(
  windowMs: number,
  concurrency: number,
  subTasks: number,
  shape: RateLimitShape,
  seed: number,
): Promise<GovernedRun> {
  const provider = new SimulatedProvider(windowMs, shape.retryAfterMs);
  const agent = limitedAgent(provider, shape);
  let firstPause: number | undefined;
  let pauses = 0;
  let pausedUntil = 0;
  let limitedAttempts = 0;
  // A run with no event and no request for this long is stuck (a step or a pause is 20× shorter).
  const idleMs = 20 * Math.max(shape.stepMs, shape.retryAfterMs) + 1000;
  const random = Math.random;
  Math.random = seeded(seed);
  const started = performance.now();
  let alive = started;
  provider.onRequest = () => {
    alive = performance.now();
  };
  try {
    const manager = createManager({
      cwd: benchDir,
      isolation: "shared",
      executor: agent.executor,
      concurrency,
    });
    const run = manager.run("bench", {
      plan: { subTasks: independent(subTasks) },
      onEvent: (e) => {
        alive = performance.now();
        if (e.type === "provider-limited" && e.until !== undefined) {
          const at = Date.now();
          firstPause ??= at;
          limitedAttempts++;
          if (at >= pausedUntil) pauses++;
          pausedUntil = Math.max(pausedUntil, Date.parse(e.until));
        }
      },
    });
    let watch: NodeJS.Timeout | undefined;
    const stuck = new Promise<"hung">((resolve) => {
      watch = setInterval(() => {
        if (performance.now() - alive > idleMs) resolve("hung");
      }, 50);
    });
    const report = await Promise.race([run, stuck]).finally(() => clearInterval(watch));
    // A run taken for stuck that ends after all (a machine too loaded) is told at the end.
    if (report === "hung") void run.then(() => lateEnds.push(performance.now() - started));
    const makespanMs = report === "hung" ? alive - started : performance.now() - started;
    const probes = agent.attempts.filter(
      (a) => a.refusedFirst && firstPause !== undefined && a.start >= firstPause,
    );
    // The ramp: attempts at work past the window's end, by when they started (or the window's end).
    const windowEnd = provider.windowEnd ?? 0;
    const after = agent.attempts
      .filter((a) => !a.limited && (a.end === 0 || a.end > windowEnd))
      .map((a) => Math.max(a.start, windowEnd))
      .sort((a, b) => a - b);
    const lastLane = after[concurrency - 1];
    return {
      makespanMs,
      status: report === "hung" ? "hung" : report.status,
      rejected: provider.rejected,
      limitedAttempts,
      pauses,
      probes: probes.length,
      probesAtOnce: maxOverlap(probes),
      rampMs: windowMs > 0 && lastLane !== undefined ? lastLane - windowEnd : undefined,
    };
  } finally {
    Math.random = random;
  }
}

function maxOverlap(intervals: { start: number; end: number }[]): number {
  const edges = intervals.flatMap((i) => [
    [i.start, 1],
    [i.end || Number.POSITIVE_INFINITY, -1],
  ]);
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) {
    now += d!;
    most = Math.max(most, now);
  }
  return most;
}

/**
 * The fixed fan-out: `concurrency` lanes take `subTasks` sub-tasks of the same steps from a queue;
 * a refused request is sent again after every Retry-After, for as long as it takes.
 */
async function naiveRun(
  windowMs: number,
  concurrency: number,
  subTasks: number,
  shape: RateLimitShape,
) {
  const provider = new SimulatedProvider(windowMs, shape.retryAfterMs);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < subTasks) {
        next++;
        for (let step = 0; step < shape.steps; step++) {
          for (;;) {
            const retryAfterMs = provider.request();
            if (retryAfterMs === undefined) break;
            await sleep(retryAfterMs);
          }
          await sleep(shape.stepMs);
        }
      }
    }),
  );
  return { makespanMs: performance.now() - started, rejected: provider.rejected };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export interface RateLimitRow {
  windowS: number;
  concurrency: number;
  subTasks: number;
  /** Medians over the repetitions, in ms at the bench's scale (of the runs that ended). */
  makespanMs: number | undefined;
  unlimitedMs: number;
  windowMs: number;
  /** makespan / (W + unlimited). */
  ratio: number | undefined;
  /** makespan ≤ W + 1.1 × unlimited, in every run. */
  makespanGoal: boolean;
  /** Runs that never ended, and when the last of them stopped moving (ms after its start). */
  hung: number;
  hungAtMs: number | undefined;
  rejected: number;
  naiveRejected: number;
  naiveMakespanMs: number;
  limitedAttempts: number;
  pauses: number;
  probes: number;
  probesAtOnce: number;
  /** At most one probe per backoff step: probes ≤ pauses, never two in flight at once. */
  probeGoal: boolean;
  rampMs: number | undefined;
  makespansMs: number[];
}

export interface RateLimitOptions {
  /** Every time × scale (0.1: ten times shorter than the real thing). */
  scale?: number;
  windowsS?: number[];
  concurrencies?: number[];
  /** Sub-tasks per concurrency lane: 2 × concurrency independent sub-tasks is the issue's case. */
  perLane?: number[];
  reps?: number;
  shape?: RateLimitShape;
  log?: (line: string) => void;
}

export async function benchRateLimit(options: RateLimitOptions = {}): Promise<RateLimitRow[]> {
  const scale = options.scale ?? 0.1;
  const shape = scaled(options.shape ?? defaultShape, scale);
  const reps = options.reps ?? 3;
  const log = options.log ?? (() => {});
  const rows: RateLimitRow[] = [];
  for (const perLane of options.perLane ?? [2, 1])
    for (const concurrency of options.concurrencies ?? [4, 8]) {
      const subTasks = perLane * concurrency;
      const name = `${subTasks} sub-tasks at concurrency ${concurrency}`;
      const unlimited: number[] = [];
      for (let rep = 0; rep < reps; rep++) {
        const run = await governedRun(0, concurrency, subTasks, shape, 1 + rep);
        if (run.status !== "completed") throw new Error(`unlimited run ${run.status}`);
        unlimited.push(run.makespanMs);
        log(`${name}, W 0, rep ${rep + 1}: ${Math.round(run.makespanMs)} ms`);
      }
      const unlimitedMs = median(unlimited);
      for (const windowS of options.windowsS ?? [10, 30, 60]) {
        const windowMs = Math.round(windowS * 1000 * scale);
        const runs: GovernedRun[] = [];
        for (let rep = 0; rep < reps; rep++) {
          const run = await governedRun(windowMs, concurrency, subTasks, shape, 1 + rep);
          runs.push(run);
          log(
            `${name}, W ${windowS}, rep ${rep + 1}: ${run.status} ${Math.round(run.makespanMs)} ms, ${run.rejected} requests refused, ${run.limitedAttempts} attempts rate-limited, ${run.probes} probes in ${run.pauses} pauses`,
          );
        }
        // No jitter in it: one run.
        const naive = await naiveRun(windowMs, concurrency, subTasks, shape);
        log(
          `${name}, W ${windowS}, fixed fan-out: ${Math.round(naive.makespanMs)} ms, ${naive.rejected} refused`,
        );
        const ended = runs.filter((r) => r.status !== "hung");
        const hung = runs.filter((r) => r.status === "hung");
        const makespanMs = ended.length ? median(ended.map((r) => r.makespanMs)) : undefined;
        const ramps = ended.flatMap((r) => (r.rampMs === undefined ? [] : [r.rampMs]));
        rows.push({
          windowS,
          concurrency,
          subTasks,
          makespanMs,
          unlimitedMs,
          windowMs,
          ratio: makespanMs === undefined ? undefined : makespanMs / (windowMs + unlimitedMs),
          makespanGoal:
            hung.length === 0 &&
            runs.every(
              (r) => r.status === "completed" && r.makespanMs <= windowMs + 1.1 * unlimitedMs,
            ),
          hung: hung.length,
          hungAtMs: hung.length ? Math.max(...hung.map((r) => r.makespanMs)) : undefined,
          rejected: median(runs.map((r) => r.rejected)),
          naiveRejected: naive.rejected,
          naiveMakespanMs: naive.makespanMs,
          limitedAttempts: median(runs.map((r) => r.limitedAttempts)),
          pauses: median(runs.map((r) => r.pauses)),
          probes: median(runs.map((r) => r.probes)),
          probesAtOnce: Math.max(...runs.map((r) => r.probesAtOnce)),
          probeGoal: runs.every((r) => r.probes <= r.pauses && r.probesAtOnce <= 1),
          rampMs: ramps.length ? median(ramps) : undefined,
          makespansMs: runs.map((r) => r.makespanMs),
        });
      }
    }
  return rows;
}

export function rateLimitReport(rows: RateLimitRow[], options: RateLimitOptions = {}): string {
  const scale = options.scale ?? 0.1;
  const shape = options.shape ?? defaultShape;
  const s = (ms: number) => `${(ms / scale / 1000).toFixed(1)} s`;
  const lines = [
    `Scale ${scale}: every time is ${scale} × the real one (the figures below are read back at scale 1, measured ms / ${scale}); medians of ${options.reps ?? 3} runs.`,
    `Agent: ${shape.steps} model steps of ${shape.stepMs / 1000} s an attempt; on a 429 (Retry-After ${shape.retryAfterMs / 1000} s) ${shape.agentRetries} retries of its own, each after the Retry-After, then \`rate-limited\`.`,
    "",
    "| sub-tasks | concurrency | W | makespan | unlimited | makespan / (W + unlimited) | ≤ W + 1.1 × unlimited | window's end to all lanes at work | refused requests, governed / fixed fan-out | rate-limited attempts | pauses | probes (most at once) | ≤ one probe per pause | fixed fan-out's makespan |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    const makespan =
      r.makespanMs === undefined
        ? `hung (${r.hung}/${r.makespansMs.length}, no sign of life after ${s(r.hungAtMs ?? 0)})`
        : r.hung
          ? `${s(r.makespanMs)}; ${r.hung} hung`
          : s(r.makespanMs);
    const goal = `${r.makespanGoal ? "met" : "missed"} (${s(r.windowMs + 1.1 * r.unlimitedMs)})`;
    lines.push(
      `| ${r.subTasks} | ${r.concurrency} | ${r.windowS} s | ${makespan} | ${s(r.unlimitedMs)} | ${r.ratio === undefined ? "—" : `${r.ratio.toFixed(3)}×`} | ${goal} | ${r.rampMs === undefined ? "—" : s(r.rampMs)} | ${r.rejected} / ${r.naiveRejected} (${((100 * r.rejected) / r.naiveRejected).toFixed(0)} %)${r.hung ? " before the hang" : ""} | ${r.limitedAttempts} | ${r.pauses} | ${r.probes} (${r.probesAtOnce}) | ${r.probeGoal ? "met" : "missed"} | ${s(r.naiveMakespanMs)} |`,
    );
  }
  lines.push(
    "",
    `Runs taken for stuck that ended after all: ${lateEnds.length}${lateEnds.length ? ` (${lateEnds.map((m) => s(m)).join(", ")} after their start)` : ""}.`,
    "",
    "Every run's makespan:",
    ...rows.map(
      (r) =>
        `- ${r.subTasks} sub-tasks, concurrency ${r.concurrency}, W ${r.windowS} s: ${r.makespansMs.map((m) => s(m)).join(", ")}${r.hung ? ` (${r.hung} hung: the time is its last sign of life)` : ""}`,
    ),
  );
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // `node bench/rate-limit.ts [--scale 0.1] [--reps 3] [--per-lane 2,1] [--windows 10,30,60] [--concurrency 4,8]`
  const { values } = parseArgs({
    options: {
      scale: { type: "string", default: "0.1" },
      reps: { type: "string", default: "3" },
      "per-lane": { type: "string", default: "2,1" },
      windows: { type: "string", default: "10,30,60" },
      concurrency: { type: "string", default: "4,8" },
    },
  });
  const list = (text: string) => text.split(",").map(Number);
  const options: RateLimitOptions = {
    scale: Number(values.scale),
    reps: Number(values.reps),
    perLane: list(values["per-lane"]),
    windowsS: list(values.windows),
    concurrencies: list(values.concurrency),
    log: (line) => process.stderr.write(`${line}\n`),
  };
  const numbers = [options.scale!, options.reps!, ...options.perLane!, ...options.concurrencies!];
  if (numbers.some((n) => !(n > 0)) || options.windowsS!.some((w) => !(w > 0)))
    throw new Error("--scale, --reps, --per-lane, --windows and --concurrency take numbers > 0");
  const started = performance.now();
  const rows = await benchRateLimit(options);
  // A stuck run that was only slow would end by now.
  await sleep(20 * defaultShape.stepMs * options.scale!);
  console.log(rateLimitReport(rows, options));
  console.log(`\nWall time ${((performance.now() - started) / 1000).toFixed(0)} s.`);
}
