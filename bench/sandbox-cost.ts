// What the OS sandbox costs: an attempt's start (wrap, then a confined process that answers) and
// a command run inside an already confined process, confined vs not, at concurrency 1 and 4.
// Builds its own working directories (a git worktree of a 1,000-file repository, as a slot is)
// and removes them, also when it fails.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sandbox } from "@taskledger/core";
import { createSandbox } from "@taskledger/sandbox";
import { createGitRepo, gitIn } from "@taskledger/testing";

export interface SandboxCostRow {
  what: "attempt start" | "command";
  confined: boolean;
  concurrency: number;
  p50Ms: number;
  p95Ms: number;
  samples: number;
}

/** Commands per sample of the in-sandbox row: the per-command figure is a sample over this. */
const commandsPerSample = 100;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<number | null>((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: "ignore" });
    child.once("error", reject);
    child.once("close", resolve);
  });
}

async function sample(
  sandbox: Sandbox,
  cwd: string,
  home: string,
  command: string,
): Promise<number> {
  const started = performance.now();
  const launch = await sandbox.wrap({
    file: "sh",
    args: ["-c", command],
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
    write: [home],
  });
  const code = await run(launch.file, launch.args, cwd, launch.env);
  await launch.release();
  if (code !== 0) throw new Error(`the sampled command exited ${code}`);
  return performance.now() - started;
}

async function measure(
  sandbox: Sandbox,
  slots: readonly string[],
  home: string,
  what: SandboxCostRow["what"],
  concurrency: number,
  rounds: number,
): Promise<number[]> {
  // An attempt's start: `true` in a fresh launch. A command: many in one launch, minus its start.
  const many = `i=0; while [ $i -lt ${commandsPerSample} ]; do /bin/true; i=$((i+1)); done`;
  const times: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const batch = await Promise.all(
      Array.from({ length: concurrency }, (_, i) =>
        what === "attempt start"
          ? sample(sandbox, slots[i] as string, home, "true")
          : Promise.all([
              sample(sandbox, slots[i] as string, home, many),
              sample(sandbox, slots[i] as string, home, "true"),
            ]).then(([all, start]) => Math.max(0, all - start) / commandsPerSample),
      ),
    );
    times.push(...batch);
  }
  return times.sort((a, b) => a - b);
}

export async function benchSandboxCost(rounds = 20): Promise<SandboxCostRow[]> {
  const root = await mkdtemp(join(tmpdir(), "taskledger-bench-sandbox-"));
  const sandboxes = new Map<boolean, Sandbox>([
    [true, createSandbox({ mode: "required" })],
    [false, createSandbox({ mode: "off" })],
  ]);
  try {
    const files = Object.fromEntries(
      Array.from({ length: 1000 }, (_, i) => [`src/f${i}.ts`, `export const f${i} = ${i};\n`]),
    );
    const repo = createGitRepo(join(root, "repo"), files);
    const slots = ["a", "b", "c", "d"].map((name) => {
      const path = join(root, `slot-${name}`);
      gitIn(repo, "worktree", "add", "--detach", path);
      return path;
    });
    const home = await mkdtemp(join(root, "home-"));
    const rows: SandboxCostRow[] = [];
    for (const what of ["attempt start", "command"] as const) {
      for (const concurrency of [1, 4]) {
        for (const confined of [false, true]) {
          const sandbox = sandboxes.get(confined) as Sandbox;
          const times = await measure(sandbox, slots, home, what, concurrency, rounds);
          rows.push({
            what,
            confined,
            concurrency,
            p50Ms: quantile(times, 0.5),
            p95Ms: quantile(times, 0.95),
            samples: times.length,
          });
        }
      }
    }
    return rows;
  } finally {
    for (const sandbox of sandboxes.values()) await sandbox.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** The table of docs/performance.md. */
export function sandboxCostTable(rows: readonly SandboxCostRow[]): string {
  const lines = [
    "| measured | concurrency | unconfined p50 / p95 | confined p50 / p95 | added at p50 |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const what of ["attempt start", "command"] as const) {
    for (const concurrency of [1, 4]) {
      const off = rows.find((r) => r.what === what && r.concurrency === concurrency && !r.confined);
      const on = rows.find((r) => r.what === what && r.concurrency === concurrency && r.confined);
      if (!off || !on) continue;
      const ms = (n: number) => `${n.toFixed(what === "command" ? 2 : 1)} ms`;
      lines.push(
        `| ${what}${what === "command" ? ` (per command, ${commandsPerSample} in one launch)` : ""} | ${concurrency} | ${ms(off.p50Ms)} / ${ms(off.p95Ms)} | ${ms(on.p50Ms)} / ${ms(on.p95Ms)} | ${ms(on.p50Ms - off.p50Ms)} |`,
      );
    }
  }
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(sandboxCostTable(await benchSandboxCost()));
}
