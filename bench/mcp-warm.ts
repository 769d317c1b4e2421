// `taskledger mcp` as an editor's agent meets it: the built CLI's MCP server over stdio (the
// official SDK's client), its rooms in-process (its opencode servers kept between runs, released
// after `--release-idle`). Approval (the client answering the plan review) → the agent's first
// model request, on a first and a second run in the one server process; then its memory (RSS of
// the mcp process and every process under it) while its servers are up and once `--release-idle`
// has passed. The repository of bench/fast-path.ts; a planner that thinks 2 s. Needs the build.
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { commandLineOf, createModelServer, pollUntil, tempDirectory } from "@taskledger/testing";
import { connectMcp } from "../packages/cli/src/test-support/mcp-client.ts";
import { cliEnvironment, type WarmSubTask, warmReplies } from "./daemon-warm.ts";
import { project } from "./fast-path.ts";

export interface McpWarmRow {
  run: "first" | "second";
  concurrency: number;
  /** Approval → the model server receiving the run's first agent request, ms. */
  firstMs: number;
  /** Approval → each sub-task's first agent request: median and largest, ms. */
  p50Ms: number;
  maxMs: number;
  attempts: number;
}

export interface McpMemoryRow {
  when: "before any run" | "servers up" | "after --release-idle";
  /** Sum of VmRSS of the mcp process and its descendants (shared pages counted in each), MB. */
  rssMb: number;
  /** Sum of their PSS (shared pages divided among their sharers), MB: closer to what they cost. */
  pssMb: number;
  processes: number;
  opencodeServers: number;
}

/** `pid` and every process under it, by parent pid from /proc. */
function treeOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]!) ?? []));
  return all;
}

/** A /proc field of `pid` in kB (`VmRSS` of status, `Pss` of smaps_rollup); 0 once it is gone. */
function kb(pid: number, file: string, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/${file}`, "utf8");
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** An `opencode serve` process itself, not a shell or sandbox wrapper whose arguments name it. */
function isOpencodeServer(pid: number): boolean {
  const [file = "", ...args] = commandLineOf(pid).split("\0");
  return /opencode[^/]*$/.test(file) && args.includes("serve");
}

function memoryOf(pid: number, when: McpMemoryRow["when"]): McpMemoryRow {
  const tree = treeOf(pid);
  const total = (file: string, field: string) =>
    Math.round(tree.reduce((sum, p) => sum + kb(p, file, field), 0) / 1024);
  return {
    when,
    rssMb: total("status", "VmRSS"),
    pssMb: total("smaps_rollup", "Pss"),
    processes: tree.length,
    opencodeServers: tree.filter(isOpencodeServer).length,
  };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? Number.NaN;
};

export async function benchMcpWarm(
  tracked = 10_000,
  dependencies = 20_000,
  concurrency = 4,
  releaseIdleSeconds = 20,
): Promise<{ runs: McpWarmRow[]; memory: McpMemoryRow[] }> {
  const benchDir = tempDirectory("taskledger-bench-mcp-");
  const cacheDir = join(benchDir, "cache");
  mkdirSync(cacheDir, { recursive: true });
  const firstRequest = new Map<string, number>();
  let subTasks: WarmSubTask[] = [];
  const server = await createModelServer({ replies: warmReplies(() => subTasks, firstRequest) });
  const repo = project(tracked, dependencies, benchDir);
  let approvedAt = Number.NaN;
  const client = await connectMcp({
    args: [
      ...["--provider", "openai-compatible", "--model", "m", "--base-url", server.openaiBaseURL],
      ...["--agent-model", "taskledger-compatible/m"],
      ...["--store", join(benchDir, "store"), "--concurrency", String(concurrency)],
      ...["--release-idle", String(releaseIdleSeconds)],
    ],
    cwd: repo,
    env: cliEnvironment(cacheDir),
    roots: [repo],
    // The person approves the plan the moment it is shown.
    elicit: async () => {
      approvedAt = Date.now();
      return { action: "accept", content: { run: true } };
    },
  });
  const runs: McpWarmRow[] = [];
  const memory: McpMemoryRow[] = [memoryOf(client.pid, "before any run")];
  try {
    for (const [round, run] of (["first", "second"] as const).entries()) {
      subTasks = Array.from({ length: concurrency }, (_, i) => ({
        id: `m${round}s${i}`,
        title: `Step ${i}`,
        description: "Say done.",
        successCriteria: ["done"],
      }));
      const { runId } = await client.ok<{ runId: string }>("start_run", {
        request: "Work through the planned steps. Each one only says done.",
      });
      const done = await client.ok<{ outcome: string; report?: { status: string } }>(
        "wait_for_run",
        { runId, timeoutSeconds: 600 },
      );
      if (done.report?.status !== "completed")
        throw new Error(`mcp ${run} run: ${JSON.stringify(done)}\n${client.log()}`);
      const waits = subTasks.map((s) => (firstRequest.get(s.id) ?? Number.NaN) - approvedAt);
      runs.push({
        run,
        concurrency,
        firstMs: Math.min(...waits),
        p50Ms: percentile(waits, 0.5),
        maxMs: Math.max(...waits),
        attempts: waits.length,
      });
      process.stderr.write(`${JSON.stringify(runs.at(-1))}\n`);
    }
    memory.push(memoryOf(client.pid, "servers up"));
    // The server says when it has released its pool; then its servers' processes must be gone.
    const released = await pollUntil(
      async () => client.log().includes("stopped the idle agent servers"),
      (yes) => yes,
      (releaseIdleSeconds + 120) * 20,
    );
    if (!released)
      throw new Error(`mcp: no release after ${releaseIdleSeconds} s\n${client.log()}`);
    const after = await pollUntil(
      async () => memoryOf(client.pid, "after --release-idle"),
      (m) => m.opencodeServers === 0,
    );
    memory.push(after);
  } finally {
    await client.close();
    await server.close();
    for (const entry of readdirSync(benchDir))
      rmSync(join(benchDir, entry), { recursive: true, force: true });
  }
  return { runs, memory };
}

if (import.meta.main) {
  const [tracked, dependencies, concurrency, idle] = process.argv.slice(2).map(Number);
  const result = await benchMcpWarm(
    tracked || undefined,
    dependencies || undefined,
    concurrency || undefined,
    idle || undefined,
  );
  for (const row of [...result.runs, ...result.memory])
    process.stdout.write(`${JSON.stringify(row)}\n`);
}
