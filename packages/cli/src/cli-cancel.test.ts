import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { JsonReport } from "./json-report.js";
import { processesUnder } from "./test-support/cli-harness.js";

const bin = resolve(import.meta.dirname, "../dist/bin.js");

describe("Ctrl-C", () => {
  it.runIf(process.platform === "linux")(
    "cancels cleanly: running attempts stopped, report printed, exit 130, no opencode left",
    async () => {
      expect(existsSync(bin), "run `npm run build` first").toBe(true);
      const child = spawn(process.execPath, [bin, "demo", "--json", "--keep"], {
        env: { ...process.env, CI: "true" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => {
        stdout += d;
      });
      const workDir = new Promise<string>((resolveDir) => {
        child.stderr.on("data", (d) => {
          stderr += d;
          const dir = /agents working in (\S+)/.exec(stderr)?.[1];
          if (dir && stderr.includes("▶ Step 1/3")) resolveDir(dir);
        });
      });
      const dir = await workDir;
      // Wait until opencode itself runs in the demo directory, then interrupt.
      let agents: number[] = [];
      for (let i = 0; i < 200 && agents.length === 0; i++) {
        agents = await processesUnder(dir);
        if (agents.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(agents.length).toBeGreaterThan(0);
      child.kill("SIGINT");
      const code = await new Promise<number | null>((r) => child.on("exit", r));
      expect(code).toBe(130);
      const report = JSON.parse(stdout) as JsonReport;
      expect(report.status).toBe("cancelled");
      expect(report.subTasks[0]?.status).toBe("cancelled");
      expect(await processesUnder(dir)).toEqual([]);
      for (const pid of agents) expect(existsSync(`/proc/${pid}`)).toBe(false);
      await rm(dir, { recursive: true, force: true });
    },
    120_000,
  );
});
