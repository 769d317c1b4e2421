// What `import()` of each package costs a host: wall time and resident memory of a fresh Node
// process that imports it and nothing else (the built packages; `npm run build` first). Run alone
// with `node bench/import-cost.ts`, or as part of `npm run bench`.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

/** Imported in a fresh process each, in this order; `node:fs` is the floor a bare import costs. */
export const importTargets = [
  "node:fs",
  "@taskledger/core",
  "@taskledger/llm",
  "@taskledger/executor",
  "@taskledger/evaluator",
  "taskledger",
  "taskledger/cli",
] as const;

export interface ImportCost {
  target: string;
  /** Medians over the runs. */
  ms: number;
  rssMb: number;
}

// Timed inside the child, so Node's own start-up is not counted; RSS after the import settles.
const probe = `
const started = performance.now();
await import(process.argv[1]);
const ms = performance.now() - started;
console.log(JSON.stringify({ ms, rssMb: process.memoryUsage().rss / 1048576 }));
`;

export async function benchImportCost(runs = 5): Promise<ImportCost[]> {
  const results: ImportCost[] = [];
  for (const target of importTargets) {
    const samples: { ms: number; rssMb: number }[] = [];
    for (let i = 0; i < runs; i++) {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--input-type=module", "-e", probe, target],
        { cwd: import.meta.dirname },
      ).catch(() => ({ stdout: "" }));
      // A target this version does not export is left out.
      if (stdout === "") break;
      samples.push(JSON.parse(stdout));
    }
    if (samples.length === 0) continue;
    results.push({
      target,
      ms: median(samples.map((s) => s.ms)),
      rssMb: median(samples.map((s) => s.rssMb)),
    });
  }
  return results;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await benchImportCost()) {
    console.log(
      `${r.target.padEnd(22)} ${r.ms.toFixed(0).padStart(5)} ms ${r.rssMb.toFixed(0).padStart(5)} MB`,
    );
  }
}
