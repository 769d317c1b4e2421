import { mkdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { beforeAll } from "vitest";

// `node scripts/suite-cpu.mjs` sets TASKLEDGER_TEST_CGROUP to a cgroup of its own: each test file
// then moves its worker into a child cgroup as it starts, so every process the file starts
// (orphans included) is counted to it. Without the variable this does nothing.
// biome-ignore lint/suspicious/noUndeclaredEnvVars: read by the tests' setup, not by a turbo task
const parent = process.env.TASKLEDGER_TEST_CGROUP;
if (parent) {
  // Vitest passes the file second, and wants the first destructured.
  // biome-ignore lint/correctness/noEmptyPattern: the context is not used
  beforeAll(({}: object, suite: { filepath?: string }) => {
    const file = basename(suite.filepath ?? "unknown").replace(/\.test\.ts$/, "");
    const dir = join(parent, `${file}~${process.pid}~${Date.now()}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "cgroup.procs"), String(process.pid));
  });
}
