import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bindToHost } from "./bind-to-host.js";
import { isProcessAlive } from "./process-alive.js";
import { commandLineOf, processStartTime } from "./process-identity.js";

// A host that starts `sleep`, binds it, optionally lets go, prints its pid and waits to be killed.
const hostScript = (release: boolean) => `
const { spawn } = require("node:child_process");
const { bindToHost } = require(process.argv[1]);
const sleep = spawn("sleep", ["300"], { stdio: "ignore" });
const startTime = require("node:fs").readFileSync("/proc/" + sleep.pid + "/stat", "utf8").split(") ")[1].split(" ")[19];
const binding = bindToHost([{ pid: sleep.pid, startTime }]);
${release ? "binding.release();" : ""}
process.stdout.write(sleep.pid + "\\n");
setInterval(() => {}, 1 << 30);
`;

/** The watchdogs running with `marker` in their environment. */
function watchdogsWith(marker: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => commandLineOf(pid).includes("taskledger-host-watchdog"))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, "utf8").includes(marker);
      } catch {
        return false;
      }
    });
}

async function until(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  return check();
}

/** Starts a host (running this module's source through a CommonJS shim) and reads its sleep's pid. */
async function startHost(release: boolean, marker: string): Promise<[ChildProcess, number]> {
  const shim = new URL("./bind-to-host.ts", import.meta.url).pathname;
  const host = spawn(
    process.execPath,
    ["--experimental-strip-types", "--no-warnings", "-e", hostScript(release), shim],
    { env: { ...process.env, TEST_MARKER: marker }, stdio: ["ignore", "pipe", "inherit"] },
  );
  const pid = await new Promise<number>((done) =>
    host.stdout?.once("data", (chunk: Buffer) => done(Number(chunk.toString().trim()))),
  );
  return [host, pid];
}

describe.runIf(process.platform === "linux")("bindToHost", () => {
  it("kills a bound process when its host is killed with kill -9, and its watchdog exits", async () => {
    const marker = `bind-to-host-${process.pid}-${Date.now()}`;
    const [host, sleep] = await startHost(false, marker);
    try {
      expect(isProcessAlive(sleep)).toBe(true);
      expect(watchdogsWith(marker)).toHaveLength(1);
      host.kill("SIGKILL");
      expect(await until(() => !isProcessAlive(sleep))).toBe(true);
      expect(await until(() => watchdogsWith(marker).length === 0)).toBe(true);
    } finally {
      host.kill("SIGKILL");
      if (isProcessAlive(sleep)) process.kill(sleep, "SIGKILL");
    }
  });

  it("leaves a released process alone, and its watchdog is gone at once", async () => {
    const marker = `bind-to-host-${process.pid}-${Date.now()}-released`;
    const [host, sleep] = await startHost(true, marker);
    try {
      expect(await until(() => watchdogsWith(marker).length === 0)).toBe(true);
      const started = processStartTime(sleep);
      host.kill("SIGKILL");
      await new Promise((resolve) => host.once("exit", resolve));
      expect(isProcessAlive(sleep) && processStartTime(sleep) === started).toBe(true);
    } finally {
      if (isProcessAlive(sleep)) process.kill(sleep, "SIGKILL");
    }
  });

  it("binds nothing when given nothing", () => {
    expect(() => bindToHost([]).release()).not.toThrow();
  });
});
