// What hiding the home costs a launch: the default policy (the home hidden, its toolchains bound
// back) against `homeReads: ["~"]` (the whole home read, as before), samples interleaved so both
// meet the same load. A sample is a wrap, a confined `true` and the release; "wrap" is the wrap
// alone (the policy's paths worked out, the runtime's walk). Run from the repository's top after
// a build: `node packages/sandbox/bench/home-reads-cost.ts [rounds]`. Uses this user's HOME and PATH.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sandbox } from "@taskledger/core";
import { createSandbox } from "@taskledger/sandbox";
import { createGitRepo, gitIn } from "@taskledger/testing";

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

async function sample(sandbox: Sandbox, cwd: string, home: string) {
  const started = performance.now();
  const launch = await sandbox.wrap({
    file: "sh",
    args: ["-c", "true"],
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
    write: [home],
  });
  const wrapped = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(launch.file, launch.args, { cwd, env: launch.env, stdio: "ignore" });
    child.once("error", reject);
    child.once("close", resolve);
  });
  await launch.release();
  if (code !== 0) throw new Error(`the confined true exited ${code}`);
  return { wrap: wrapped - started, total: performance.now() - started };
}

const rounds = Number(process.argv[2] ?? 40);
const root = await mkdtemp(join(tmpdir(), "taskledger-bench-home-"));
const policies = {
  "home hidden (default)": createSandbox({ mode: "required" }),
  'whole home read (homeReads: ["~"])': createSandbox({ mode: "required", homeReads: ["~"] }),
};
try {
  const repo = createGitRepo(join(root, "repo"), { "a.txt": "a\n" });
  const slot = join(root, "slot");
  gitIn(repo, "worktree", "add", "-q", "--detach", slot);
  const home = await mkdtemp(join(root, "private-"));
  const times = new Map<string, { wrap: number[]; total: number[] }>(
    Object.keys(policies).map((name) => [name, { wrap: [], total: [] }]),
  );
  // One of each first, unmeasured: the runtime's first walk of the policy paths.
  for (const sandbox of Object.values(policies)) await sample(sandbox, slot, home);
  for (let round = 0; round < rounds; round++) {
    const order = Object.entries(policies);
    if (round % 2 === 1) order.reverse();
    for (const [name, sandbox] of order) {
      const one = await sample(sandbox, slot, home);
      times.get(name)?.wrap.push(one.wrap);
      times.get(name)?.total.push(one.total);
    }
  }
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  console.log("| policy | wrap p50 / p95 | launch (wrap, `true`, release) p50 / p95 |");
  console.log("| --- | --- | --- |");
  for (const [name, { wrap, total }] of times) {
    wrap.sort((a, b) => a - b);
    total.sort((a, b) => a - b);
    console.log(
      `| ${name} | ${ms(quantile(wrap, 0.5))} / ${ms(quantile(wrap, 0.95))} | ${ms(quantile(total, 0.5))} / ${ms(quantile(total, 0.95))} |`,
    );
  }
} finally {
  for (const sandbox of Object.values(policies)) await sandbox.close();
  await rm(root, { recursive: true, force: true });
}
