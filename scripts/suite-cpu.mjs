// CPU-seconds per test file: `node scripts/suite-cpu.mjs [vitest args…]` (as root, on Linux, with
// cgroup v1's cpuacct or cgroup v2), after `npm run build`. Runs `vitest run` in a cgroup of its
// own, each test file in a child of it (test-support/cpu-per-file.ts), then prints the total, the
// wall time and the heaviest files. `time` counts only the children it reaps; this counts the
// opencode servers and sandboxes a file leaves to go away on their own too.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const roots = [
  { dir: "/sys/fs/cgroup/cpuacct", usage: (d) => Number(read(d, "cpuacct.usage")) / 1e9 },
  {
    dir: "/sys/fs/cgroup",
    usage: (d) => Number(/usage_usec (\d+)/.exec(read(d, "cpu.stat"))?.[1] ?? 0) / 1e6,
  },
];
const read = (dir, file) => readFileSync(join(dir, file), "utf8");
const root = roots.find((r) =>
  existsSync(join(r.dir, r.dir.endsWith("cpuacct") ? "cpuacct.usage" : "cpu.stat")),
);
if (!root || process.getuid?.() !== 0) {
  console.error("suite-cpu: needs root and a cpuacct (v1) or cpu.stat (v2) cgroup hierarchy");
  process.exit(2);
}
const cgroup = join(root.dir, `taskledger-suite-${process.pid}`);
mkdirSync(cgroup);
writeFileSync(join(cgroup, "cgroup.procs"), String(process.pid));
const started = performance.now();
const vitest = spawnSync("node_modules/.bin/vitest", ["run", ...process.argv.slice(2)], {
  stdio: "inherit",
  env: { ...process.env, CI: process.env.CI ?? "true", TASKLEDGER_TEST_CGROUP: cgroup },
});
const wall = (performance.now() - started) / 1000;
// Leftovers a file let go of count until they exit: a moment for them, as the run's end would.
spawnSync("sleep", ["3"]);
const files = new Map();
for (const name of readdirSync(cgroup, { withFileTypes: true })) {
  if (!name.isDirectory()) continue;
  const file = name.name.split("~")[0];
  files.set(file, (files.get(file) ?? 0) + root.usage(join(cgroup, name.name)));
}
const total = root.usage(cgroup);
const rows = [...files].sort((a, b) => b[1] - a[1]);
console.log(
  `\nsuite-cpu: ${total.toFixed(0)} CPU-s in ${wall.toFixed(0)} s wall, ${rows.length} files`,
);
for (const [file, seconds] of rows.slice(0, 25))
  console.log(`${seconds.toFixed(1).padStart(8)}  ${file}`);
// Moved back out, so the cgroups can go.
const parent = join(cgroup, "..");
writeFileSync(join(parent, "cgroup.procs"), String(process.pid));
for (const name of readdirSync(cgroup, { withFileTypes: true }))
  if (name.isDirectory()) rmdirSync(join(cgroup, name.name), { recursive: false });
try {
  rmdirSync(cgroup);
} catch {
  // A process still in it (an orphan outliving the wait): the kernel keeps it until it exits.
}
process.exit(vitest.status ?? 1);
