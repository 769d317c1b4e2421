// Makespan against the critical path: how close the scheduler comes to the lower bound that
// unlimited concurrency allows, and how much it saves against running sub-tasks one at a time.
// Twice: with `isolation: "shared"` (the scheduler alone) and with worktrees in a repository of
// 1,000 files (what a user gets: a slot per attempt, a commit, a merge), slots warm.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createManager, type Executor, emptyUsage, type SubTaskInput } from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { createFakeExecutor, createGitRepo, tempDirectory } from "@taskledger/testing";

// The runs work in directories of their own, never in this repository; kept slots too.
// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-");
process.env.TASKLEDGER_CACHE_DIR ??= join(benchDir, "cache");

/** A repository of `files` small files in directories of 100. */
export function benchRepository(files: number): string {
  const contents: Record<string, string> = {};
  for (let i = 0; i < files; i++) contents[`src/d${Math.floor(i / 100)}/f${i}.txt`] = `${i}\n`;
  return createGitRepo(mkdtempSync(join(benchDir, "repo-")), contents);
}

/** An attempt that takes its time, then writes a file of its own: a commit and a merge each. */
function writingExecutor(durations: Map<string, number>): Executor {
  return {
    async run(_prompt, options) {
      const delayMs = durations.get(options.subTask.id)!;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      await writeFile(join(options.cwd, `${options.subTask.id}.txt`), "done\n");
      return {
        outcome: "finished",
        finalText: `did ${options.subTask.id}`,
        toolCalls: [],
        stepFinishReasons: ["stop"],
        filesChanged: [],
        usage: emptyUsage(),
        durationMs: delayMs,
      };
    },
  };
}

interface Graph {
  name: string;
  subTasks: SubTaskInput[];
  durations: Map<string, number>;
}

const node = (id: string, dependsOn: string[] = []): SubTaskInput => ({
  id,
  title: id,
  description: id,
  successCriteria: ["done"],
  dependsOn,
});

/** A deterministic pseudo-random source, so every run measures the same graphs. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function graphs(unitMs: number): Graph[] {
  const make = (
    name: string,
    subTasks: SubTaskInput[],
    duration: (i: number) => number,
  ): Graph => ({
    name,
    subTasks,
    durations: new Map(subTasks.map((s, i) => [s.id, duration(i)])),
  });
  const chain = Array.from({ length: 8 }, (_, i) => node(`c${i}`, i ? [`c${i - 1}`] : []));
  const fan = [node("root"), ...Array.from({ length: 8 }, (_, i) => node(`f${i}`, ["root"]))];
  const diamond = [node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])];
  const dag = (seed: number) => {
    const rand = random(seed);
    return Array.from({ length: 50 }, (_, i) => {
      const deps = new Set<string>();
      const count = i === 0 ? 0 : Math.floor(rand() * 3);
      for (let k = 0; k < count; k++) deps.add(`n${Math.floor(rand() * i)}`);
      return node(`n${i}`, [...deps]);
    });
  };
  const varied = (seed: number) => {
    const rand = random(seed);
    return () => Math.round(unitMs * (1 + rand() * 3));
  };
  return [
    make("chain of 8", chain, () => unitMs),
    make("fan-out of 8", fan, varied(1)),
    make("diamond", diamond, varied(2)),
    make("random DAG 50 (a)", dag(7), varied(3)),
    make("random DAG 50 (b)", dag(11), varied(4)),
  ];
}

function criticalPath(graph: Graph): number {
  const finish = new Map<string, number>();
  for (const s of graph.subTasks) {
    const start = Math.max(0, ...(s.dependsOn ?? []).map((d) => finish.get(d) ?? 0));
    finish.set(s.id, start + graph.durations.get(s.id)!);
  }
  return Math.max(...finish.values());
}

export interface MakespanRow {
  graph: string;
  subTasks: number;
  criticalPathMs: number;
  sequentialMs: number;
  makespanMs: number;
  vsCriticalPath: number;
  vsSequential: number;
}

/** A graph's makespan against its critical path and its sequential sum. */
function makespanRow(graph: Graph, makespanMs: number): MakespanRow {
  const cp = criticalPath(graph);
  const sequential = [...graph.durations.values()].reduce((a, b) => a + b, 0);
  return {
    graph: graph.name,
    subTasks: graph.subTasks.length,
    criticalPathMs: cp,
    sequentialMs: sequential,
    makespanMs: Math.round(makespanMs),
    vsCriticalPath: makespanMs / cp,
    vsSequential: makespanMs / sequential,
  };
}

export async function benchMakespan(unitMs = 50): Promise<MakespanRow[]> {
  const rows: MakespanRow[] = [];
  const shared = mkdtempSync(join(benchDir, "shared-"));
  for (const graph of graphs(unitMs)) {
    const executor = createFakeExecutor({
      script: ({ subTaskId }) => ({ type: "success", delayMs: graph.durations.get(subTaskId)! }),
    });
    const manager = createManager({
      cwd: shared,
      executor,
      concurrency: 64,
      maxSubTasks: 100,
      isolation: "shared",
    });
    const started = performance.now();
    const report = await manager.run("bench", { plan: { subTasks: graph.subTasks } });
    const makespanMs = performance.now() - started;
    if (report.status !== "completed") throw new Error(`${graph.name}: ${report.status}`);
    rows.push(makespanRow(graph, makespanMs));
  }
  return rows;
}

/**
 * The small graphs with worktrees, attempts of `unitMs`–4×`unitMs` (a fast real agent takes
 * 2–10 s; the random DAGs would take minutes at that pace): each graph runs twice in its
 * repository and the second run is measured, its slots kept from the first (as a user's second
 * run finds them).
 */
export async function benchMakespanWorktrees(
  unitMs = 2000,
  files = 1000,
  only = ["chain of 8", "fan-out of 8", "diamond"],
): Promise<MakespanRow[]> {
  const rows: MakespanRow[] = [];
  for (const graph of graphs(unitMs).filter((g) => only.includes(g.name))) {
    const repo = benchRepository(files);
    const run = async () => {
      const manager = createManager({
        cwd: repo,
        executor: writingExecutor(graph.durations),
        concurrency: 64,
        maxSubTasks: 100,
        isolation: "worktree",
        workspaces: gitWorkspaces({ slots: { maxSlots: 64 } }),
      });
      const started = performance.now();
      const report = await manager.run("bench", { plan: { subTasks: graph.subTasks } });
      if (report.status !== "completed") throw new Error(`${graph.name}: ${report.status}`);
      return performance.now() - started;
    };
    await run();
    // The first run applied its files; the second starts from the same tree.
    execFileSync("git", ["clean", "-qfd"], { cwd: repo });
    const makespanMs = await run();
    rows.push(makespanRow(graph, makespanMs));
  }
  return rows;
}
