// Git calls from a host of a given size: Node forks the whole process for each child, so what a
// git call costs the host grows with its memory. Measures wall time per call and how long the
// event loop stood still, with git forked here (`TASKLEDGER_GIT_HELPER=off`) and through the
// helper process, in a process holding 0, 300 and 800 MB more. Each size runs in its own process.
import { execFileSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { git, gitRunnerState } from "@taskledger/git-workspace";
import { tempDirectory } from "@taskledger/testing";

export interface GitCallsRow {
  /** Memory the host process holds besides Node's own (touched, so it is resident). */
  heldMb: number;
  rssMb: number;
  calls: number;
  here: { msPerCall: number; loopStalledMsPerCall: number };
  /** Undefined under the helper's bound (128 MB): such a host forks git itself. */
  helper?: { msPerCall: number; loopStalledMsPerCall: number };
}

const calls = 200;
// `off`: git forked by this process, as before the helper.
const helperSwitch = "TASKLEDGER_GIT_HELPER";

function repository(): string {
  const repo = join(tempDirectory("taskledger-bench-git-calls-"), "repo");
  execFileSync("git", ["init", "-q", "-b", "main", repo]);
  writeFileSync(join(repo, "README.md"), "bench\n");
  execFileSync("git", ["add", "-A"], { cwd: repo });
  execFileSync(
    "git",
    ["-c", "user.name=B", "-c", "user.email=b@example.test", "commit", "-qm", "init"],
    {
      cwd: repo,
    },
  );
  return repo;
}

/** `calls` git calls one after another; the loop's stall is the sum of its delays past 1 ms. */
async function measure(repo: string) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const started = performance.now();
  delay.enable();
  for (let i = 0; i < calls; i++) await git(["rev-parse", "HEAD"], { cwd: repo });
  delay.disable();
  const wall = performance.now() - started;
  // The histogram counts one sample a millisecond; its excess over 1 ms is time the loop stood.
  const stalledMs = (delay.mean / 1e6 - 1) * delay.count;
  return {
    msPerCall: Math.round((wall / calls) * 100) / 100,
    loopStalledMsPerCall: Math.round((Math.max(0, stalledMs) / calls) * 100) / 100,
  };
}

async function one(heldMb: number): Promise<GitCallsRow> {
  const held: Buffer[] = [];
  for (let i = 0; i < heldMb; i++) held.push(Buffer.alloc(1024 * 1024, 1));
  const repo = repository();
  process.env[helperSwitch] = "off";
  await measure(repo);
  const here = await measure(repo);
  delete process.env[helperSwitch];
  const rssMb = Math.round(process.memoryUsage().rss / 1e6);
  if (process.memoryUsage.rss() < 128 * 1024 * 1024) return { heldMb, rssMb, calls, here };
  // The first calls start the helper; measured once it answers.
  while (!gitRunnerState().viaHelper) await git(["rev-parse", "HEAD"], { cwd: repo });
  await measure(repo);
  const helper = await measure(repo);
  return { heldMb: held.length, rssMb, calls, here, helper };
}

export function benchGitCalls(sizes = [0, 300, 800]): GitCallsRow[] {
  return sizes.map((size) => {
    const child = spawnSync(process.execPath, [import.meta.filename, "--one", `${size}`], {
      encoding: "utf8",
    });
    if (child.status !== 0) throw new Error(`git-calls bench at ${size} MB: ${child.stderr}`);
    return JSON.parse(child.stdout) as GitCallsRow;
  });
}

// `node bench/git-calls.ts`: the three sizes.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === "--one") {
    console.log(JSON.stringify(await one(Number(process.argv[3]))));
    process.exit(0);
  }
  console.table(
    benchGitCalls().map((row) => ({
      "held MB": row.heldMb,
      "RSS MB": row.rssMb,
      "ms/call here": row.here.msPerCall,
      "loop stalled ms/call here": row.here.loopStalledMsPerCall,
      "ms/call helper": row.helper?.msPerCall ?? "not used",
      "loop stalled ms/call helper": row.helper?.loopStalledMsPerCall ?? "not used",
    })),
  );
}
