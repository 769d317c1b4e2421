// What isolation costs per attempt: a worktree, the attempt's commit, its merge into the run's
// branch and the worktree's removal, on repositories of 1k and 10k files; and per run, the base
// snapshot and the final apply. Real git, an "agent" that edits one file.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { tempDirectory } from "@taskledger/testing";

export interface WorkspaceCostRow {
  files: number;
  attempts: number;
  /** Mean per attempt after the first: a reused worktree reset, commit, merge, release. */
  msPerAttempt: number;
  /** The first attempt's new worktree (a full checkout), once per attempt running at a time. */
  msNewWorktree: number;
  msWorktree: number;
  msCommit: number;
  msMerge: number;
  msRemove: number;
  /** Once per run: the base snapshot, and the branch made and applied at the end. */
  msBase: number;
  msFinish: number;
}

export function makeRepo(files: number): string {
  const dir = tempDirectory("taskledger-bench-repo-");
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `src/d${i % 100}`);
    if (i < 100) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.ts`), `export const v${i} = ${i};\n`.repeat(20));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=b", "-c", "user.email=b@example.test", "commit", "-qm", "init");
  return dir;
}

export async function benchWorkspaceCost(
  sizes = [1_000, 10_000],
  attempts = 8,
): Promise<WorkspaceCostRow[]> {
  const rows: WorkspaceCostRow[] = [];
  const signal = new AbortController().signal;
  for (const files of sizes) {
    const repo = makeRepo(files);
    try {
      let t = performance.now();
      const workspace = await gitWorkspaces().open({
        runId: `bench-${files}`,
        cwd: repo,
        isolation: "worktree",
        apply: true,
      });
      const msBase = performance.now() - t;
      const sums = { worktree: 0, commit: 0, merge: 0, remove: 0 };
      let msNewWorktree = 0;
      for (let i = 0; i <= attempts; i++) {
        t = performance.now();
        const space = await workspace.attempt(
          { subTaskId: `t${i}`, attempt: 1, from: undefined },
          signal,
        );
        if (i === 0) msNewWorktree = performance.now() - t;
        else sums.worktree += performance.now() - t;
        writeFileSync(join(space.cwd, `src/d${i}/f${i}.ts`), `export const changed = ${i};\n`);
        t = performance.now();
        const captured = await space.capture(`t${i}`);
        sums.commit += performance.now() - t;
        t = performance.now();
        await workspace.integrate({
          subTaskId: `t${i}`,
          title: "t",
          commit: captured!.commit,
          onMerged: async () => {},
        });
        sums.merge += performance.now() - t;
        t = performance.now();
        await space.dispose();
        sums.remove += performance.now() - t;
        if (i === 0) Object.assign(sums, { commit: 0, merge: 0, remove: 0 });
      }
      t = performance.now();
      await workspace.finish({ apply: true });
      const msFinish = performance.now() - t;
      const per = (ms: number) => Math.round(ms / attempts);
      rows.push({
        files,
        attempts,
        msPerAttempt: per(sums.worktree + sums.commit + sums.merge + sums.remove),
        msNewWorktree: Math.round(msNewWorktree),
        msWorktree: per(sums.worktree),
        msCommit: per(sums.commit),
        msMerge: per(sums.merge),
        msRemove: per(sums.remove),
        msBase: Math.round(msBase),
        msFinish: Math.round(msFinish),
      });
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  }
  return rows;
}

if (import.meta.main) {
  for (const row of await benchWorkspaceCost()) console.log(JSON.stringify(row));
}
