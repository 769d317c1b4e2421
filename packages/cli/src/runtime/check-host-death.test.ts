import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { alive, killProcessesUnder, pollUntil, processesUnder } from "@taskledger/testing";
import { describe, expect, it } from "vitest";

const host = resolve(import.meta.dirname, "../test-support/check-host.ts");
const built = resolve(import.meta.dirname, "../../../process/dist/watchdog-process.js");

describe.runIf(process.platform === "linux")(
  "a library host killed with kill -9 during a check",
  () => {
    it("leaves no check command running: the executor's watchdog kills its group", async () => {
      expect(existsSync(built), "run `npm run build` first").toBe(true);
      const root = await mkdtemp(join(tmpdir(), "taskledger-check-death-"));
      const cwd = join(root, "work");
      await mkdir(cwd);
      const child = spawn(process.execPath, [host, cwd], { cwd: root, stdio: "ignore" });
      try {
        const checkPid = await pollUntil(
          () =>
            readFile(join(cwd, "pid.txt"), "utf8").then(
              (t) => Number(t.trim()),
              () => 0,
            ),
          (pid) => pid > 0,
        );
        expect(checkPid).toBeGreaterThan(0);
        expect(alive(checkPid)).toBe(true);
        child.kill("SIGKILL");
        const left = await pollUntil(
          () => processesUnder(root),
          (pids) => pids.length === 0,
        );
        expect(left).toEqual([]);
        expect(alive(checkPid)).toBe(false);
      } finally {
        child.kill("SIGKILL");
        await killProcessesUnder(root);
        await rm(root, { recursive: true, force: true });
      }
    }, 60_000);
  },
);
