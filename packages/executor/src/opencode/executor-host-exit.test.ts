import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { commandLineOf, pollUntil, processesUnder } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { attemptDirPrefix } from "../agent/attempt-temp-dir.js";
import { builtExecutor, startLibraryHost } from "../test-support/library-host.js";

/**
 * A library host (attempt-host.ts) running one attempt against real opencode: on the server executor
 * (`no-close`, `idle-server`: the model answers), or on the CLI executor (`run`: the model never does).
 */
async function libraryHost(mode: "no-close" | "idle-server" | "run") {
  expect(existsSync(builtExecutor), "run `npm run build` first").toBe(true);
  // The executor's directories, so the server itself, go under the root.
  const host = await startLibraryHost(
    "taskledger-server-life-",
    mode,
    () => (mode === "run" ? { hang: true } : { text: "Done." }),
    { tmp: true },
  );
  const { root, child } = host;
  const temp = host.temp!;
  // `done` once the attempt finished; `started` once it printed its first process (`run`).
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const done = new Promise<{ outcome: string; serverPid: number }>((resolveDone) => {
    child.stdout?.on("data", () => {
      const stdout = host.stdout();
      if (stdout.includes('"pid"')) started();
      if (stdout.includes('"done"')) resolveDone(JSON.parse(stdout.trim().split("\n").at(-1)!));
    });
  });
  const attemptDirs = async () =>
    (await readdir(temp).catch(() => [] as string[])).filter((n) => n.startsWith(attemptDirPrefix));
  /** What the host left once it is gone: processes under `root` and attempt directories. */
  const leftovers = async () => {
    const gone = await pollUntil(
      async () => ({ pids: await processesUnder(root), dirs: await attemptDirs() }),
      (left) => left.pids.length === 0 && left.dirs.length === 0,
    );
    return { processes: gone.pids.map((pid) => `${pid} ${commandLineOf(pid)}`), dirs: gone.dirs };
  };
  const { exited, cleanup, stderr } = host;
  return { child, done, running, exited, attemptDirs, leftovers, cleanup, stderr };
}

describe.runIf(process.platform === "linux")("an executor's host that ends", () => {
  it("a host that never calls close() exits by itself once its work is done, leaving no server and no directory", async () => {
    const run = await libraryHost("no-close");
    try {
      const report = await run.done;
      expect(report.outcome, run.stderr()).toBe("finished");
      // Before: the idle server's handles held the event loop and the host never exited.
      expect(await run.exited).toEqual({ code: 0, signal: null });
      expect(await run.leftovers()).toEqual({ processes: [], dirs: [] });
    } finally {
      await run.cleanup();
    }
  }, 120_000);

  it("SIGTERM to a host with an idle server leaves no process and no temp directory", async () => {
    const run = await libraryHost("idle-server");
    try {
      const report = await run.done;
      expect(report.outcome, run.stderr()).toBe("finished");
      expect(await run.attemptDirs()).toHaveLength(1);
      run.child.kill("SIGTERM");
      expect((await run.exited).signal).toBe("SIGTERM");
      // Before: the watchdog killed the server but its directory stayed until a later sweep.
      expect(await run.leftovers()).toEqual({ processes: [], dirs: [] });
    } finally {
      await run.cleanup();
    }
  }, 120_000);

  it("SIGTERM to a host while a CLI executor's attempt runs leaves no process and no attempt directory", async () => {
    const run = await libraryHost("run");
    try {
      await run.running;
      expect(await run.attemptDirs()).toHaveLength(1);
      run.child.kill("SIGTERM");
      expect((await run.exited).signal).toBe("SIGTERM");
      expect(await run.leftovers()).toEqual({ processes: [], dirs: [] });
    } finally {
      await run.cleanup();
    }
  }, 120_000);
});
