// Makespan against the critical path: how close the scheduler comes to the lower bound that
// unlimited concurrency allows, and how much it saves against running sub-tasks one at a time.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManager, type SubTaskInput } from "@taskledger/core";
import { createFakeExecutor } from "@taskledger/testing";

// The runs work in an empty directory of their own, never in this repository.
const benchDir = mkdtempSync(join(tmpdir(), "taskledger-bench-"));

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

export async function benchMakespan(unitMs = 50): Promise<MakespanRow[]> {
  const rows: MakespanRow[] = [];
  for (const graph of graphs(unitMs)) {
    const executor = createFakeExecutor({
      script: ({ subTaskId }) => ({ type: "success", delayMs: graph.durations.get(subTaskId)! }),
    });
    const manager = createManager({ cwd: benchDir, executor, concurrency: 64, maxSubTasks: 100 });
    const started = performance.now();
    const report = await manager.run("bench", { plan: { subTasks: graph.subTasks } });
    const makespanMs = performance.now() - started;
    if (report.status !== "completed") throw new Error(`${graph.name}: ${report.status}`);
    const cp = criticalPath(graph);
    const sequential = [...graph.durations.values()].reduce((a, b) => a + b, 0);
    rows.push({
      graph: graph.name,
      subTasks: graph.subTasks.length,
      criticalPathMs: cp,
      sequentialMs: sequential,
      makespanMs: Math.round(makespanMs),
      vsCriticalPath: makespanMs / cp,
      vsSequential: makespanMs / sequential,
    });
  }
  return rows;
}
