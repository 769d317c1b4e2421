// What the project's environment costs a worktree slot: a repository of 10,000 tracked files with
// an ignored node_modules of 5k, 10k or 20k files (copied into each new slot), one included
// `.env`. Per size: a new slot with and without the dependencies (what the copy adds, and how
// it grows), and an attempt in a reused slot (reset sparing the environment, lockfile check,
// included files). Real git, real `cp`; the bench makes all it measures in a temporary directory.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { makeRepo } from "./workspace-cost.ts";

export interface SlotEnvironmentRow {
  dependencyFiles: number;
  /** A new slot with the dependencies copied in, and the same slot without them. */
  msNewSlot: number;
  msNewSlotBare: number;
  /** Of the new slot: preparing its environment (the copy), without the checkout. */
  msEnvironment: number;
  /** Mean over attempts in a reused slot: reset, lockfile check, included files. */
  msReusedAttempt: number;
  msReusedAttemptBare: number;
}

/** `files` files in `files / 10` packages of ten, as an install lays them out. */
function installDependencies(repo: string, files: number): void {
  for (let p = 0; p < files / 10; p++) {
    const dir = join(repo, "node_modules", `pkg-${p}`, "lib");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(repo, "node_modules", `pkg-${p}`, "package.json"), `{"name":"pkg-${p}"}\n`);
    for (let f = 0; f < 9; f++)
      writeFileSync(join(dir, `f${f}.js`), `module.exports = ${p * 10 + f};\n`.repeat(40));
  }
}

async function measure(repo: string, dependencies: boolean, attempts: number) {
  const signal = new AbortController().signal;
  const workspace = await gitWorkspaces({ dependencies }).open({
    runId: `bench-env-${dependencies}-${Date.now()}`,
    cwd: repo,
    isolation: "worktree",
    apply: false,
  });
  try {
    let t = performance.now();
    await workspace.prepare?.(signal);
    const msNewSlot = performance.now() - t;
    // The environment's own part (copies, included files), without the worktree's checkout.
    const msEnvironment = workspace.takePreparations?.()[0]?.durationMs ?? 0;
    let reused = 0;
    for (let i = 0; i < attempts; i++) {
      t = performance.now();
      const space = await workspace.attempt(
        { subTaskId: `t${i}`, attempt: 1, from: undefined },
        signal,
      );
      reused += performance.now() - t;
      // An attempt's work, and what an install does to the copied dependencies.
      writeFileSync(join(space.cwd, "src", "changed.ts"), `${i}\n`);
      if (dependencies) writeFileSync(join(space.cwd, "node_modules", "pkg-0", "new.js"), `${i}\n`);
      await space.dispose();
    }
    return { msNewSlot, msEnvironment, msReused: reused / attempts };
  } finally {
    await workspace.close();
  }
}

export async function benchSlotEnvironment(
  sizes = [5_000, 10_000, 20_000],
  trackedFiles = 10_000,
  attempts = 6,
): Promise<SlotEnvironmentRow[]> {
  const rows: SlotEnvironmentRow[] = [];
  for (const dependencyFiles of sizes) {
    const repo = makeRepo(trackedFiles);
    try {
      writeFileSync(join(repo, ".gitignore"), "node_modules/\n.env\n");
      writeFileSync(join(repo, ".worktreeinclude"), ".env\n");
      writeFileSync(join(repo, ".env"), "KEY=value\n");
      installDependencies(repo, dependencyFiles);
      // Written back first: a copy racing the page cache's writeback measures the disk, not us.
      execFileSync("sync");
      // The better of two runs each: the machine's other load only ever adds.
      const best = async (dependencies: boolean) => {
        const [a, b] = [
          await measure(repo, dependencies, attempts),
          await measure(repo, dependencies, attempts),
        ];
        return a.msNewSlot <= b.msNewSlot ? a : b;
      };
      const bare = await best(false);
      const full = await best(true);
      rows.push({
        dependencyFiles,
        msNewSlot: Math.round(full.msNewSlot),
        msEnvironment: Math.round(full.msEnvironment),
        msNewSlotBare: Math.round(bare.msNewSlot),
        msReusedAttempt: Math.round(full.msReused),
        msReusedAttemptBare: Math.round(bare.msReused),
      });
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  }
  return rows;
}

if (import.meta.main) {
  for (const row of await benchSlotEnvironment()) console.log(JSON.stringify(row));
}
