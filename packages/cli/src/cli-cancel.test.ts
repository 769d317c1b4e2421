import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, commandLineOf, pollUntil } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import type { JsonReport } from "./output/json-report.js";
import { builtCli, processesUnder, spawnCli } from "./test-support/cli-harness.js";

describe("Ctrl-C", () => {
  it.runIf(process.platform === "linux")(
    "cancels cleanly: running attempts stopped, report printed, exit 130, no opencode left",
    async () => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const { child, exit, stdout, stderr } = spawnCli(["demo", "--json", "--keep"]);
      const started = new Promise<[string, string]>((resolveDir) => {
        child.stderr?.on("data", () => {
          const dir = /agents working in (\S+)/.exec(stderr())?.[1];
          const runId = /branch taskledger\/([\w-]+)\)/.exec(stderr())?.[1];
          if (dir && runId && stderr().includes("▶ Step 1/3")) resolveDir([dir, runId]);
        });
      });
      const [dir, runId] = await started;
      // The demo is a repository: its agents run in this run's worktrees under the temp directory.
      // The demo's worktrees are its run's own (it keeps no slots), under the temp directory.
      const worktrees = join(tmpdir(), "taskledger-worktrees", runId);
      // The opencode servers (the default executor) have their directories under TMPDIR.
      const running = async () => [
        ...(await processesUnder(dir)),
        ...(await processesUnder(worktrees)),
        ...(await processesUnder(tmpdir())).filter((pid) =>
          commandLineOf(pid).includes("opencode"),
        ),
      ];
      // Wait until opencode itself runs for the demo, then interrupt.
      let agents: number[] = [];
      for (let i = 0; i < 200 && agents.length === 0; i++) {
        agents = await running();
        if (agents.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(agents.length).toBeGreaterThan(0);
      child.kill("SIGINT");
      const { code } = await exit;
      expect(code).toBe(130);
      const report = JSON.parse(stdout()) as JsonReport;
      expect(report.status).toBe("cancelled");
      expect(report.subTasks[0]?.status).toBe("cancelled");
      // Killed before the CLI exits; a killed process can take a moment to be torn down under
      // load (seen once in CI: three listed right after the exit). One still there after 5 s was
      // left, and is named.
      const left = await pollUntil(running, (pids) => pids.length === 0, 100);
      expect(left.map((pid) => `${pid} ${commandLineOf(pid)}`)).toEqual([]);
      // Gone, or a zombie only init has yet to reap (a sandbox's launcher, orphaned at the kill).
      for (const pid of agents) expect(alive(pid), commandLineOf(pid)).toBe(false);
      await rm(dir, { recursive: true, force: true });
    },
    120_000,
  );
});
