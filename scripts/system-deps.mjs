// The system packages the tests need. Under CI as root a missing one is installed with apt-get;
// anywhere else one line says how to install it (the tests that need it then skip, or fail under CI).
import { spawnSync } from "node:child_process";

const needed = [
  { name: "chromium", binary: "chromium", for: "the browser tests of the page" },
  { name: "redis-server", binary: "redis-server", for: "the queue and worker tests" },
  // The OS sandbox around every agent (@anthropic-ai/sandbox-runtime on Linux).
  { name: "bubblewrap", binary: "bwrap", for: "the sandbox tests" },
  { name: "socat", binary: "socat", for: "the sandbox tests" },
  { name: "ripgrep", binary: "rg", for: "the sandbox tests" },
];

const onPath = (binary) => spawnSync("sh", ["-c", `command -v ${binary}`]).status === 0;
const missing = needed.filter((dep) => !onPath(dep.binary));
if (missing.length === 0) process.exit(0);

const names = missing.map((dep) => dep.name);
const root = process.getuid?.() === 0;
if (process.env.CI !== undefined && root && onPath("apt-get")) {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const run = (args) => spawnSync("apt-get", args, { stdio: "inherit", env }).status === 0;
  console.log(`system-deps: installing ${names.join(", ")} with apt-get`);
  if (!run(["update"]) || !run(["install", "-y", ...names])) {
    console.error(`system-deps: apt-get could not install ${names.join(", ")}`);
    process.exit(1);
  }
} else {
  for (const dep of missing)
    console.log(
      `system-deps: ${dep.name} is missing (${dep.for}); install it with: sudo apt-get install -y ${dep.name}`,
    );
}
