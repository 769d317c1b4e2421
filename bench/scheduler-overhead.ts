import { createManager, type SubTaskInput } from "@taskledger/core";
import { createFakeExecutor, tempDirectory } from "@taskledger/testing";

// The runs work in an empty directory of their own, never in this repository.
// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-");

export interface OverheadRow {
  subTasks: number;
  dependencies: number;
  totalMs: number;
  usPerSubTask: number;
  usPerNodeAndEdge: number;
}

function randomDag(n: number, seed: number): SubTaskInput[] {
  let state = seed;
  const rand = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
  return Array.from({ length: n }, (_, i) => {
    const deps = new Set<string>();
    const count = i === 0 ? 0 : 1 + Math.floor(rand() * 3);
    for (let k = 0; k < count; k++) deps.add(`t${Math.floor(rand() * i)}`);
    return {
      id: `t${i}`,
      title: "t",
      description: "d",
      successCriteria: ["c"],
      dependsOn: [...deps],
    };
  });
}

export async function benchSchedulerOverhead(
  sizes = [1_000, 10_000, 50_000],
): Promise<OverheadRow[]> {
  const rows: OverheadRow[] = [];
  for (const n of sizes) {
    const subTasks = randomDag(n, n);
    const dependencies = subTasks.reduce((sum, s) => sum + (s.dependsOn?.length ?? 0), 0);
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const manager = createManager({ cwd: benchDir, executor, concurrency: 8, maxSubTasks: n });
    const started = performance.now();
    const report = await manager.run("bench", { plan: { subTasks } });
    const totalMs = performance.now() - started;
    if (report.status !== "completed") throw new Error(`${n}: ${report.status}`);
    rows.push({
      subTasks: n,
      dependencies,
      totalMs: Math.round(totalMs),
      usPerSubTask: (totalMs * 1000) / n,
      usPerNodeAndEdge: (totalMs * 1000) / (n + dependencies),
    });
  }
  return rows;
}
