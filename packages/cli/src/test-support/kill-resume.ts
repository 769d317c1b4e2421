// The `kill -9`, then `resume` harness the CLI's tests share. Not part of the package.
import type { ChildProcess } from "node:child_process";
import { readdir, rm } from "node:fs/promises";
import type { RunEvent } from "@taskledger/core";
import { expect } from "vitest";
import type { JsonReport } from "../output/json-report.js";
import {
  type CliExit,
  killProcessesUnder,
  processesLeft,
  runDirectories,
  runLogOf,
  spawnCli,
} from "./cli-harness.js";

/** What a run killed by `kill -9`, then resumed from its store alone, left. */
export interface KilledAndResumed {
  runId: string;
  /** The log as the killed process left it. */
  before: RunEvent[];
  /** The log once the resumed process ended. */
  after: RunEvent[];
  resumed: CliExit;
  /** The resumed run's JSON report. */
  report: JsonReport;
  /** Processes still running under the run's directories or its repository's slot pool. */
  leftover: number[];
}

/**
 * A run of the built CLI with a durable store, to be `kill -9`ed at a moment the test picks (from
 * a scripted model reply, a file it watches, the log) and then resumed: `root` holds the run's
 * `cwd` (made here) and `store`. `dispose` kills what is left and removes `root`. Both CLIs get
 * `env` laid over the test's own (Codex's key: `codexEnv`).
 */
export interface KillResumeRun {
  root: string;
  cwd: string;
  store: string;
  /** True once the run was killed: what the test's script may answer differently after. */
  readonly killed: boolean;
  /** SIGKILLs the running CLI, once; before it started, nothing. */
  kill(): void;
  /**
   * `taskledger run …argv --store <store> --json`, which must die of `kill`; then
   * `taskledger resume <id> --store <store> --json …resumeArgs`, which must exit 0.
   */
  killThenResume(argv: string[], resumeArgs?: string[]): Promise<KilledAndResumed>;
  /** The killed CLI if it still runs, every process left under `root`, then `root`. */
  dispose(): Promise<void>;
}

export async function killResumeRun(
  prefix: string,
  env: Record<string, string | undefined> = {},
): Promise<KillResumeRun> {
  const { root, cwd, store } = await runDirectories(prefix);
  let victim: ChildProcess | undefined;
  let killed = false;
  return {
    root,
    cwd,
    store,
    get killed() {
      return killed;
    },
    kill() {
      if (killed || !victim?.pid) return;
      killed = true;
      process.kill(victim.pid, "SIGKILL");
    },
    async killThenResume(argv, resumeArgs = []) {
      const first = spawnCli(["run", ...argv, "--store", store, "--json"], env);
      victim = first.child;
      const ended = await first.exit;
      expect(ended.signal, ended.stderr || ended.stdout).toBe("SIGKILL");
      const [file] = await readdir(store);
      const runId = file!.replace(/\.jsonl$/, "");
      const before = await runLogOf(store);
      // The run logged its options: the store alone resumes it.
      const resumed = await spawnCli(
        ["resume", runId, "--store", store, "--json", ...resumeArgs],
        env,
      ).exit;
      expect(resumed.code, resumed.stderr || resumed.stdout).toBe(0);
      const report = JSON.parse(resumed.stdout) as JsonReport;
      const after = await runLogOf(store);
      const leftover = await processesLeft(root, cwd);
      return { runId, before, after, resumed, report, leftover };
    },
    async dispose() {
      if (victim?.pid && !killed) victim.kill("SIGKILL");
      await killProcessesUnder(root);
      await rm(root, { recursive: true, force: true });
    },
  };
}
