import { existsSync, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { AttemptProcess } from "@taskledger/core";
import {
  afterToolResult,
  commandLineOf,
  pollUntil,
  processesUnder,
  type RecordedRequest,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { builtExecutor, leftUnder, startLibraryHost } from "../test-support/library-host.js";

/** Replies for an agent that runs `command` with its bash tool, and is never answered after. */
function bashThenHang(command: string) {
  return (request: RecordedRequest) =>
    afterToolResult(request)
      ? { hang: true as const }
      : { toolCalls: [{ name: "bash", arguments: { command, description: "wait" } }] };
}

describe.runIf(process.platform === "linux")("a library host killed with kill -9", () => {
  it("leaves no attempt process: the watchdog kills opencode and its tool, then exits", async () => {
    expect(existsSync(builtExecutor), "run `npm run build` first").toBe(true);
    // The agent starts a command that would run for five minutes; its next call never comes.
    const host = await startLibraryHost(
      "taskledger-host-death-",
      "run",
      bashThenHang("echo $$ > pid.txt; exec sleep 300"),
    );
    const { root, cwd, child } = host;
    const tracked: AttemptProcess[] = [];
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      for (const line of chunk.split("\n").filter(Boolean)) tracked.push(JSON.parse(line));
    });
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
      expect(toolPid, host.stderr()).toBeGreaterThan(0);
      expect(
        tracked.map((p) => p.pid),
        host.stderr(),
      ).toContain(toolPid);
      const running = await processesUnder(root);
      const leader = tracked[0]?.pid as number;
      expect(running).toEqual(expect.arrayContaining([child.pid, leader, toolPid]));
      const watchdogs = running.filter((pid) => commandLineOf(pid).includes("watchdog-process"));
      expect(watchdogs).toHaveLength(1);

      process.kill(child.pid as number, "SIGKILL");
      const killedAt = performance.now();
      expect((await host.exited).signal).toBe("SIGKILL");
      expect(await leftUnder(root)).toEqual([]);
      if (process.env.DEBUG_HOST_DEATH) {
        console.log(`later kill: all gone ${Math.round(performance.now() - killedAt)} ms after it`);
      }
    } finally {
      await host.cleanup();
    }
  }, 60_000);

  it.each(["run", "run-server"])(
    "leaves no tool process when killed the moment the tool starts (%s): found by the attempt's TMPDIR",
    async (mode) => {
      expect(existsSync(builtExecutor), "run `npm run build` first").toBe(true);
      // The attempt's directories (its TMPDIR, the marker) under the root too.
      const host = await startLibraryHost(
        "taskledger-host-moment-",
        mode,
        bashThenHang("echo started > started.txt; sleep 45; echo bye > bye.txt"),
        { tmp: true },
      );
      const { root, cwd, child } = host;
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
        expect((await host.exited).signal).toBe("SIGKILL");
        expect(await leftUnder(root)).toEqual([]);
        // Not a timed assertion: the figure docs/reliability.md gives (`DEBUG_HOST_DEATH=1`).
        if (process.env.DEBUG_HOST_DEATH) {
          console.log(
            `${mode}: all gone ${Math.round(performance.now() - killedAt)} ms after the kill`,
          );
        }
      } finally {
        watcher.close();
        await host.cleanup();
      }
    },
    60_000,
  );

  it("a finished attempt and an aborted one leave no watchdog behind in a host that lives on", async () => {
    expect(existsSync(builtExecutor), "run `npm run build` first").toBe(true);
    const host = await startLibraryHost("taskledger-host-idle-", "finish", () => ({
      text: "Done.",
    }));
    const { root, child } = host;
    let watchdogSeen = false;
    const done = new Promise<void>((r) => {
      child.stdout?.on("data", () => {
        if (host.stdout().includes('"done"')) r();
      });
    });
    // Note a watchdog while the attempts run, so the test knows there was one to leave.
    const spotting = setInterval(async () => {
      const running = await processesUnder(root).catch(() => []);
      if (running.some((pid) => commandLineOf(pid).includes("watchdog-process")))
        watchdogSeen = true;
    }, 50);
    try {
      await done;
      expect(host.stdout()).toContain('"outcomes":["finished","cancelled"]');
      expect(watchdogSeen).toBe(true);
      const left = await pollUntil(
        () => processesUnder(root),
        (pids) => pids.length === 1,
      );
      // Only the host itself, still running.
      expect(left, host.stderr()).toEqual([child.pid]);
    } finally {
      clearInterval(spotting);
      await host.cleanup();
    }
  }, 60_000);
  it("the server executor's idle server dies with its host: the watchdog guards it for its whole life", async () => {
    expect(existsSync(builtExecutor), "run `npm run build` first").toBe(true);
    // The executor's directories, so the server itself, go under the root.
    const host = await startLibraryHost(
      "taskledger-host-server-",
      "idle-server",
      () => ({ text: "Done." }),
      { tmp: true },
    );
    const { root, child } = host;
    const done = new Promise<void>((r) => {
      child.stdout?.on("data", () => {
        if (host.stdout().includes('"done"')) r();
      });
    });
    try {
      await done;
      const report = JSON.parse(host.stdout().trim().split("\n").at(-1) as string);
      expect(report.outcome, host.stderr()).toBe("finished");
      const running = await processesUnder(root);
      // The host, its watchdog and the idle server.
      expect(running).toEqual(expect.arrayContaining([child.pid, report.serverPid]));
      expect(running.filter((pid) => commandLineOf(pid).includes("watchdog-process"))).toHaveLength(
        1,
      );

      process.kill(child.pid as number, "SIGKILL");
      expect((await host.exited).signal).toBe("SIGKILL");
      expect(await leftUnder(root)).toEqual([]);
    } finally {
      await host.cleanup();
    }
  }, 60_000);
});
