import { spawn } from "node:child_process";
import { existsSync, watch } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { AttemptProcess } from "@taskledger/core";
import {
  afterToolResult,
  commandLineOf,
  createModelServer,
  killProcessesUnder,
  pollUntil,
  processesUnder,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";

const host = resolve(import.meta.dirname, "../test-support/attempt-host.ts");
const built = resolve(import.meta.dirname, "../../dist/index.js");

/** A model server whose agent runs `command` with its bash tool, and is never answered after. */
function bashThenHang(command: string) {
  return createModelServer({
    replies: (request) =>
      afterToolResult(request)
        ? { hang: true }
        : { toolCalls: [{ name: "bash", arguments: { command, description: "wait" } }] },
  });
}

describe.runIf(process.platform === "linux")("a library host killed with kill -9", () => {
  it("leaves no attempt process: the watchdog kills opencode and its tool, then exits", async () => {
    expect(existsSync(built), "run `npm run build` first").toBe(true);
    const root = await mkdtemp(join(tmpdir(), "taskledger-host-death-"));
    const cwd = join(root, "work");
    await mkdir(cwd);
    // The agent starts a command that would run for five minutes; its next call never comes.
    const server = await bashThenHang("echo $$ > pid.txt; exec sleep 300");
    const child = spawn(process.execPath, [host, cwd], {
      cwd: root,
      env: {
        ...process.env,
        TASKLEDGER_TEST_PROVIDER: JSON.stringify(scriptedOpencodeProvider(server)),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const tracked: AttemptProcess[] = [];
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      for (const line of chunk.split("\n").filter(Boolean)) tracked.push(JSON.parse(line));
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_, s) => r(s)));
    try {
      // Wait until the tool's process runs and the host has seen it (its scan runs every 500 ms).
      const toolPid = await pollUntil(
        () =>
          readFile(join(cwd, "pid.txt"), "utf8").then(
            (text) => Number(text.trim()),
            () => 0,
          ),
        (pid) => pid > 0 && tracked.some((p) => p.pid === pid),
      );
      expect(toolPid, stderr).toBeGreaterThan(0);
      expect(
        tracked.map((p) => p.pid),
        stderr,
      ).toContain(toolPid);
      const running = await processesUnder(root);
      const leader = tracked[0]?.pid as number;
      expect(running).toEqual(expect.arrayContaining([child.pid, leader, toolPid]));
      const watchdogs = running.filter((pid) => commandLineOf(pid).includes("watchdog-process"));
      expect(watchdogs).toHaveLength(1);

      process.kill(child.pid as number, "SIGKILL");
      const killedAt = performance.now();
      expect(await exited).toBe("SIGKILL");
      const left = await pollUntil(
        () => processesUnder(root),
        (pids) => pids.length === 0,
      );
      expect(left.map((pid) => `${pid} ${commandLineOf(pid)}`)).toEqual([]);
      if (process.env.DEBUG_HOST_DEATH) {
        console.log(`later kill: all gone ${Math.round(performance.now() - killedAt)} ms after it`);
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await killProcessesUnder(root);
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);

  it.each(["run", "run-server"])(
    "leaves no tool process when killed the moment the tool starts (%s): found by the attempt's TMPDIR",
    async (mode) => {
      expect(existsSync(built), "run `npm run build` first").toBe(true);
      const root = await mkdtemp(join(tmpdir(), "taskledger-host-moment-"));
      const cwd = join(root, "work");
      await mkdir(cwd);
      // The attempt's directories (its TMPDIR, the marker) under `root` too.
      await mkdir(join(root, "tmp"));
      const server = await bashThenHang("echo started > started.txt; sleep 45; echo bye > bye.txt");
      const child = spawn(process.execPath, [host, cwd, mode], {
        cwd: root,
        env: {
          ...process.env,
          TMPDIR: join(root, "tmp"),
          TASKLEDGER_TEST_PROVIDER: JSON.stringify(scriptedOpencodeProvider(server)),
        },
        stdio: ["ignore", "ignore", "pipe"],
      });
      const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_, s) => r(s)));
      // Killed in the tick the tool's first command shows, before any scan of the host can see it.
      const watcher = watch(cwd);
      const killed = new Promise<number>((r) =>
        watcher.on("change", (_, name) => {
          if (name !== "started.txt") return;
          watcher.close();
          process.kill(child.pid as number, "SIGKILL");
          r(performance.now());
        }),
      );
      try {
        const killedAt = await killed;
        expect(await exited).toBe("SIGKILL");
        const left = await pollUntil(
          () => processesUnder(root),
          (pids) => pids.length === 0,
        );
        expect(left.map((pid) => `${pid} ${commandLineOf(pid)}`)).toEqual([]);
        // Not a timed assertion: the figure docs/reliability.md gives (`DEBUG_HOST_DEATH=1`).
        if (process.env.DEBUG_HOST_DEATH) {
          console.log(
            `${mode}: all gone ${Math.round(performance.now() - killedAt)} ms after the kill`,
          );
        }
      } finally {
        watcher.close();
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await killProcessesUnder(root);
        await server.close();
        await rm(root, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it("a finished attempt and an aborted one leave no watchdog behind in a host that lives on", async () => {
    expect(existsSync(built), "run `npm run build` first").toBe(true);
    const root = await mkdtemp(join(tmpdir(), "taskledger-host-idle-"));
    const cwd = join(root, "work");
    await mkdir(cwd);
    const server = await createModelServer({ replies: () => ({ text: "Done." }) });
    const child = spawn(process.execPath, [host, cwd, "finish"], {
      cwd: root,
      env: {
        ...process.env,
        TASKLEDGER_TEST_PROVIDER: JSON.stringify(scriptedOpencodeProvider(server)),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let watchdogSeen = false;
    const done = new Promise<void>((r) => {
      child.stdout.on("data", (d) => {
        stdout += d;
        if (stdout.includes('"done"')) r();
      });
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    // Note a watchdog while the attempts run, so the test knows there was one to leave.
    const spotting = setInterval(async () => {
      const running = await processesUnder(root).catch(() => []);
      if (running.some((pid) => commandLineOf(pid).includes("watchdog-process")))
        watchdogSeen = true;
    }, 50);
    try {
      await done;
      expect(stdout).toContain('"outcomes":["finished","cancelled"]');
      expect(watchdogSeen).toBe(true);
      const left = await pollUntil(
        () => processesUnder(root),
        (pids) => pids.length === 1,
      );
      // Only the host itself, still running.
      expect(left, stderr).toEqual([child.pid]);
    } finally {
      clearInterval(spotting);
      child.kill("SIGKILL");
      await killProcessesUnder(root);
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
  it("the server executor's idle server dies with its host: the watchdog guards it for its whole life", async () => {
    expect(existsSync(built), "run `npm run build` first").toBe(true);
    const root = await mkdtemp(join(tmpdir(), "taskledger-host-server-"));
    const cwd = join(root, "work");
    await mkdir(cwd);
    await mkdir(join(root, "tmp"));
    const server = await createModelServer({ replies: () => ({ text: "Done." }) });
    const child = spawn(process.execPath, [host, cwd, "idle-server"], {
      cwd: root,
      env: {
        ...process.env,
        // The executor's directories, so the server itself, go under `root`.
        TMPDIR: join(root, "tmp"),
        TASKLEDGER_TEST_PROVIDER: JSON.stringify(scriptedOpencodeProvider(server)),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const done = new Promise<void>((r) => {
      child.stdout.on("data", (d) => {
        stdout += d;
        if (stdout.includes('"done"')) r();
      });
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_, s) => r(s)));
    try {
      await done;
      const report = JSON.parse(stdout.trim().split("\n").at(-1) as string);
      expect(report.outcome, stderr).toBe("finished");
      const running = await processesUnder(root);
      // The host, its watchdog and the idle server.
      expect(running).toEqual(expect.arrayContaining([child.pid, report.serverPid]));
      expect(running.filter((pid) => commandLineOf(pid).includes("watchdog-process"))).toHaveLength(
        1,
      );

      process.kill(child.pid as number, "SIGKILL");
      expect(await exited).toBe("SIGKILL");
      const left = await pollUntil(
        () => processesUnder(root),
        (pids) => pids.length === 0,
      );
      expect(left.map((pid) => `${pid} ${commandLineOf(pid)}`)).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await killProcessesUnder(root);
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});
