// A host for host-death.test.ts, on the built package: `node sandbox-host.ts <cwd>` creates a
// sandbox, starts `sleep 300` confined, prints `{"ready":true}` once it runs and waits to be killed.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createSandbox } from "@taskledger/sandbox";

const [cwd] = process.argv.slice(2) as [string];
const sandbox = createSandbox({ mode: "required" });
const env = { PATH: process.env.PATH ?? "", HOME: cwd, TMPDIR: cwd };
const launch = await sandbox.wrap({
  file: "bash",
  args: ["-c", "touch started; exec sleep 300"],
  cwd,
  env,
  write: [cwd],
});
spawn(launch.file, launch.args, { cwd, env: launch.env, stdio: "ignore" });
// bubblewrap ties itself to this process only once it runs: a kill before that would leave it.
while (!existsSync(join(cwd, "started"))) await new Promise((resolve) => setTimeout(resolve, 20));
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
// Never closes the sandbox: the test kills this host with SIGKILL.
setInterval(() => {}, 1 << 30);
