// Attempts per minute and dispatch-to-first-model-request for the CLI executor and the server
// executor at 1, 2 and 4 attempts at once, in one run: `node bench/executor-throughput.ts`
// (after `npm run build`). Each attempt answers "ok" at once, so the figures are the executors'
// own cost (the last rows: a model that takes 2 s, to size the pool). The server executor's first
// round (its servers starting) is reported apart.
import { rm } from "node:fs/promises";
import type { Executor } from "@taskledger/core";
import { createOpencodeExecutor, createOpencodeServerExecutor } from "@taskledger/executor";
import { createModelServer, scriptedOpencodeProvider, tempDirectory } from "@taskledger/testing";
import { subTask } from "./start-sub-task.ts";

export interface ThroughputRow {
  executor: string;
  parallel: number;
  poolSize?: number;
  directories: "reused" | "new per attempt";
  modelDelayMs: number;
  attempts: number;
  attemptsPerMinute: number;
  /** Median time from `run()` to the model server's first request of that attempt. */
  medianFirstRequestMs: number;
  coldFirstRoundMs?: number;
}

const firstRequestAt = new Map<string, number>();
// How long the model takes to answer, set per row: 0 for the executors' own cost, 2 s for an
// attempt that, like a real one, mostly waits on the model.
let modelDelayMs = 0;
const server = await createModelServer({
  replies: (request) => {
    const tag = /attempt-tag-(\d+)/.exec(JSON.stringify(request.body))?.[1];
    if (tag !== undefined && !firstRequestAt.has(tag)) firstRequestAt.set(tag, performance.now());
    return modelDelayMs > 0 ? { text: "ok", delayMs: modelDelayMs } : { text: "ok" };
  },
});
let nextTag = 0;

async function measure(
  kind: "cli" | "server",
  parallel: number,
  rounds: number,
  options: { poolSize?: number; newDirs?: boolean; modelDelayMs?: number } = {},
): Promise<ThroughputRow> {
  modelDelayMs = options.modelDelayMs ?? 0;
  const settings = {
    model: "scripted/m",
    config: { provider: scriptedOpencodeProvider(server, { models: ["m"] }) },
  };
  const executor: Executor =
    kind === "cli"
      ? createOpencodeExecutor(settings)
      : createOpencodeServerExecutor({ ...settings, poolSize: options.poolSize ?? parallel });
  const made: string[] = [];
  const dir = async () => {
    const path = tempDirectory("bench-throughput-");
    made.push(path);
    return path;
  };
  const fixedDirs = await Promise.all(Array.from({ length: parallel }, dir));
  const round = async () => {
    const dirs = options.newDirs ? await Promise.all(fixedDirs.map(dir)) : fixedDirs;
    return Promise.all(
      dirs.map(async (cwd) => {
        const tag = String(nextTag++);
        const dispatched = performance.now();
        const result = await executor.run(`Say ok. attempt-tag-${tag}`, {
          subTask,
          attempt: 1,
          cwd,
          abortSignal: AbortSignal.timeout(120_000),
        });
        if (result.outcome !== "finished") {
          throw new Error(`${kind} attempt ended ${result.outcome}: ${result.error}`);
        }
        return (firstRequestAt.get(tag) ?? Number.NaN) - dispatched;
      }),
    );
  };
  let cold: number | undefined;
  if (kind === "server") {
    const start = performance.now();
    await round();
    cold = performance.now() - start;
  }
  const waits: number[] = [];
  const started = performance.now();
  for (let r = 0; r < rounds; r++) waits.push(...(await round()));
  const wall = performance.now() - started;
  await executor.close?.();
  await Promise.all(made.map((path) => rm(path, { recursive: true, force: true })));
  waits.sort((a, b) => a - b);
  return {
    executor: kind,
    parallel,
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    directories: options.newDirs ? "new per attempt" : "reused",
    modelDelayMs,
    attempts: waits.length,
    attemptsPerMinute: (waits.length / wall) * 60_000,
    medianFirstRequestMs: waits[Math.floor(waits.length / 2)] ?? Number.NaN,
    ...(cold === undefined ? {} : { coldFirstRoundMs: cold }),
  };
}

export async function benchExecutorThroughput(): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const parallel of [1, 2, 4]) {
    rows.push(await measure("cli", parallel, parallel === 4 ? 2 : 3));
    rows.push(await measure("server", parallel, 6));
  }
  rows.push(await measure("server", 4, 4, { newDirs: true }));
  rows.push(await measure("server", 4, 6, { poolSize: 2 }));
  rows.push(await measure("server", 4, 6, { poolSize: 1 }));
  for (const poolSize of [4, 2, 1]) {
    rows.push(await measure("server", 4, 3, { poolSize, modelDelayMs: 2000 }));
  }
  return rows;
}

if (import.meta.main ?? process.argv[1]?.endsWith("executor-throughput.ts")) {
  try {
    for (const row of await benchExecutorThroughput()) console.log(JSON.stringify(row));
  } finally {
    await server.close();
  }
}
