import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { isProcessAlive } from "@taskledger/core";
import { daemonSocketPath } from "@taskledger/daemon";
import {
  commandLineOf,
  pollUntil,
  type RecordedRequest,
  roleOf,
  scriptByRole,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonReport } from "../output/json-report.js";
import {
  agentArgs,
  type CliExit,
  spawnCli,
  tempRepo,
  testScratch,
} from "../test-support/cli-harness.js";
import { completedJudge, toolResults, writeCall } from "../test-support/scripted-replies.js";

// The per-user daemon as a user meets it: the built CLI, its real background service, the real
// opencode inside the OS sandbox (the default), a scripted model server. Each test has its own
// cache directory, so its own daemon.
const caches: string[] = [];
afterEach(async () => {
  for (const cache of caches.splice(0)) {
    await cli(cache, ["daemon", "stop"]);
    rmSync(cache, { recursive: true, force: true });
  }
});

const scratch = testScratch();

function newCache(): string {
  const cache = mkdtempSync(join(tmpdir(), "tl-daemon-"));
  caches.push(cache);
  return cache;
}

/** The built CLI with the daemon on (the suite turns it off for other tests) and `cache`. */
function cli(cache: string, argv: string[], extra: Record<string, string> = {}): Promise<CliExit> {
  return spawnCli(argv, { TASKLEDGER_CACHE_DIR: cache, TASKLEDGER_DAEMON: undefined, ...extra })
    .exit;
}

/** A repository, this test's own cache (its own daemon), and the model server answering `script`. */
async function setup(script: Parameters<typeof scriptByRole>[0]) {
  const cache = newCache();
  const repo = tempRepo("tl-daemon-repo-", { "README.md": "x\n" });
  const server = await scratch.server({ replies: scriptByRole(script) });
  return { cache, repo, server, baseURL: server.openaiBaseURL };
}

interface Status {
  running?: false;
  pid: number;
  version: string;
  servers: number;
  serverStarts: number;
}

async function status(cache: string): Promise<Status | { running: false }> {
  const exit = await cli(cache, ["daemon", "status", "--json"]);
  return JSON.parse(exit.stdout) as Status | { running: false };
}

async function running(cache: string): Promise<Status> {
  const now = await status(cache);
  if ("pid" in now) return now;
  throw new Error("the daemon is not running");
}

const judge = completedJudge("Done.");

function planOf(...ids: string[]) {
  return {
    text: JSON.stringify({
      subTasks: ids.map((id) => ({
        id,
        title: `Write ${id}.txt`,
        description: `Write ${id}.txt`,
        successCriteria: [`${id}.txt exists`],
        dependsOn: [],
      })),
    }),
  };
}

/** An agent that writes `<sub-task>.txt` (naming the run by its request), then says so. */
function writer(request: RecordedRequest) {
  const id = /# Sub-task ([\w.-]+):/.exec(JSON.stringify(request.body))?.[1] ?? "x";
  if (toolResults(request) > 0) return { text: `I wrote ${id}.txt.` };
  return writeCall(`${id}.txt`, `${id}\n`);
}

function runArgs(request: string, cwd: string, baseURL: string): string[] {
  return ["run", request, "--yes", "--json", ...agentArgs(baseURL), "--cwd", cwd];
}

/** The pids whose command line contains `text`. */
function processesWith(text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(text)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The daemon's descendants (its servers, their sandboxes and tools). */
function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const all: number[] = [];
  const walk = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      all.push(child);
      walk(child);
    }
  };
  walk(pid);
  return all;
}

/**
 * The sandbox runtime's `srt-obs-*` directories whose socket `pid` listens on (found through its
 * descriptors and `/proc/net/unix`): the ones that process made.
 */
function observerDirsOf(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // Closed meanwhile.
    }
  }
  const dirs = new Set<string>();
  for (const line of readFileSync("/proc/net/unix", "utf8").split("\n").slice(1)) {
    const [, , , , , , inode = "", path = ""] = line.trim().split(/\s+/);
    if (inodes.has(inode) && /\/srt-obs-[^/]+\/[^/]+$/.test(path)) dirs.add(dirname(path));
  }
  return [...dirs];
}

/** True once `check` holds, asked every 50 ms for at most `ms`. */
const until = (check: () => boolean, ms: number) =>
  pollUntil(
    async () => check(),
    (held) => held,
    ms / 50,
  );

describe("taskledger's daemon: rooms kept warm between runs (built CLI, real opencode)", () => {
  it("a second run on the same repository starts its attempt without starting a server; stop leaves nothing", {
    timeout: 180_000,
  }, async () => {
    let plan = planOf("a");
    const { cache, repo, baseURL } = await setup({ plan: () => plan, judge, agent: writer });
    const first = await cli(cache, runArgs("Write a.txt", repo, baseURL));
    expect(first.code, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as JsonReport).status).toBe("completed");
    const afterFirst = await running(cache);
    expect(afterFirst.servers).toBeGreaterThanOrEqual(1);
    // The servers live in the daemon, not under the run that ended.
    const kept = descendantsOf(afterFirst.pid);
    expect(kept.length).toBeGreaterThan(0);

    plan = planOf("b");
    const second = await cli(cache, runArgs("Write b.txt", repo, baseURL));
    expect(second.code, second.stderr).toBe(0);
    expect((JSON.parse(second.stdout) as JsonReport).status).toBe("completed");
    expect(readFileSync(join(repo, "b.txt"), "utf8")).toBe("b\n");
    const afterSecond = await running(cache);
    expect(afterSecond.pid).toBe(afterFirst.pid);
    expect(afterSecond.serverStarts).toBe(afterFirst.serverStarts);

    // Its whole tree and the sandbox runtime's observer directory, gone the moment stop returns.
    const tree = [afterSecond.pid, ...descendantsOf(afterSecond.pid)];
    expect(tree.map(commandLineOf).join("\n")).toContain("socat");
    const observers = observerDirsOf(afterSecond.pid);
    expect(observers.length).toBeGreaterThan(0);
    const stop = await cli(cache, ["daemon", "stop"]);
    expect(stop.stdout).toContain(`process ${afterFirst.pid}`);
    expect(tree.filter((pid) => isProcessAlive(pid)).map(commandLineOf)).toEqual([]);
    expect(observers.filter((dir) => existsSync(dir))).toEqual([]);
    expect(existsSync(daemonSocketPath(cache))).toBe(false);
    expect(await status(cache)).toEqual({ running: false });
  });
});

describe("taskledger's daemon: started with the run", () => {
  it("a run starts the daemon as it starts, before its agent check, and the daemon is the service alone", {
    timeout: 120_000,
  }, async () => {
    const { cache, repo, baseURL } = await setup({ plan: planOf("a"), judge, agent: writer });
    // An agent model opencode does not list: the run ends at its check, before any plan or slot.
    const args = runArgs("Write a.txt", repo, baseURL).map((arg) =>
      arg === "taskledger-compatible/agent" ? "openai/no-such-model" : arg,
    );
    const refused = await cli(cache, args);
    expect(refused.code, refused.stderr).not.toBe(0);
    expect(refused.stderr).toContain("no-such-model");
    // Started by then all the same (it was not waiting for the run's first warm-up) ...
    const started = await pollUntil(
      () => status(cache),
      (now) => "pid" in now,
      40,
    );
    if (!("pid" in started)) throw new Error("no daemon was started");
    // ... as its own entry, which loads the service and not the whole CLI.
    const words = commandLineOf(started.pid).split("\0");
    expect(words.some((word) => word.endsWith("runtime/daemon-serve.js"))).toBe(true);
    expect(words).not.toContain("serve");
  });
});

describe("taskledger's daemon: failure is ordinary", () => {
  it("two runs at once on one repository each get their own room", {
    timeout: 180_000,
  }, async () => {
    const { cache, repo, baseURL } = await setup({
      plan: (request) => planOf(JSON.stringify(request.body).includes("Write a.txt") ? "a" : "b"),
      judge,
      agent: writer,
    });
    const [a, b] = await Promise.all([
      cli(cache, runArgs("Write a.txt", repo, baseURL)),
      cli(cache, runArgs("Write b.txt", repo, baseURL)),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const log = readFileSync(join(cache, "daemon.log"), "utf8");
    const dirs = [...log.matchAll(/attempt 1 of ([ab]) in (\S+)/g)].map((m) => [m[1], m[2]]);
    expect(dirs.map(([id]) => id).sort()).toEqual(["a", "b"]);
    expect(dirs[0]?.[1]).not.toBe(dirs[1]?.[1]);
    const daemon = await running(cache);
    expect(daemon.serverStarts).toBe(2);
    // `clean` stops it first: its whole tree is gone before a slot is removed.
    const tree = [daemon.pid, ...descendantsOf(daemon.pid)];
    const clean = await cli(cache, ["clean", "--cwd", repo]);
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toContain(`process ${daemon.pid}`);
    expect(tree.filter((pid) => isProcessAlive(pid)).map(commandLineOf)).toEqual([]);
  });

  it("kill -9 of the daemon mid-attempt: the attempt is retried in a new daemon and nothing is left", {
    timeout: 180_000,
  }, async () => {
    let firsts = 0;
    const { cache, repo, server, baseURL } = await setup({
      plan: planOf("a"),
      judge,
      agent: (request) => {
        if (toolResults(request) === 0 && firsts++ === 0) {
          const command = "sleep 47.25";
          return { toolCalls: [{ name: "bash", arguments: { command, description: "wait" } }] };
        }
        return writer(request);
      },
    });
    const run = cli(cache, runArgs("Write a.txt", repo, baseURL));
    expect(await until(() => processesWith("sleep 47.25").length > 0, 90_000)).toBe(true);
    const daemon = await running(cache);
    const kept = descendantsOf(daemon.pid);
    const observers = observerDirsOf(daemon.pid);
    expect(observers.length).toBeGreaterThan(0);
    process.kill(daemon.pid, "SIGKILL");
    const exit = await run;
    expect(exit.code, exit.stderr).toBe(0);
    const report = JSON.parse(exit.stdout) as JsonReport;
    expect(report.status).toBe("completed");
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("a\n");
    // Two attempts: the first cut short through no fault of the agent (what its retry was told),
    // the second run by the new daemon, not by the run's in-process fallback.
    expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ["a", "completed", 2],
    ]);
    const retried = server.requests.filter(
      (r) =>
        roleOf(r) === "agent" && JSON.stringify(r.body).includes("through no fault of the agent"),
    );
    expect(retried).not.toEqual([]);
    expect(readFileSync(join(cache, "daemon.log"), "utf8")).toMatch(/attempt 2 of a in /);
    // Its servers, sandboxes and the tool it ran went with it.
    expect(await until(() => processesWith("sleep 47.25").length === 0, 15_000)).toBe(true);
    await until(() => kept.every((pid) => !isProcessAlive(pid)), 15_000);
    expect(kept.filter((pid) => isProcessAlive(pid)).map(commandLineOf)).toEqual([]);
    // The next command found a new daemon, the dead one's lock and socket taken over; its sandbox
    // swept the observer directory the killed one left.
    expect((await running(cache)).pid).not.toBe(daemon.pid);
    expect(observers.filter((dir) => existsSync(dir))).toEqual([]);
  });

  it("an older daemon is stopped and replaced; a stale lock and socket are taken over", {
    timeout: 60_000,
  }, async () => {
    const cache = newCache();
    const path = daemonSocketPath(cache);
    const told: string[] = [];
    const old = createServer((socket) => {
      socket.on("data", (chunk) => {
        for (const line of String(chunk).split("\n").filter(Boolean)) {
          const message = JSON.parse(line) as { type: string; id?: number };
          told.push(message.type);
          if (message.type === "hello") {
            socket.write(
              `${JSON.stringify({ type: "hello", version: "0.0.1", build: "old", pid: process.pid })}\n`,
            );
          }
          if (message.type === "stop") {
            socket.write(`${JSON.stringify({ type: "done", id: message.id })}\n`);
            old.close();
            rmSync(path, { force: true });
          }
        }
      });
    });
    await new Promise<void>((resolve) => old.listen(path, resolve));
    // A lock whose holder is long dead.
    writeFileSync(join(cache, "daemon.lock"), JSON.stringify({ pid: 2 ** 22 + 7, startTime: "1" }));
    const start = await cli(cache, ["daemon", "start"]);
    expect(start.code, start.stderr).toBe(0);
    expect(told).toEqual(expect.arrayContaining(["hello", "stop"]));
    const now = await running(cache);
    expect(now.pid).not.toBe(process.pid);
    expect(now.version).not.toBe("0.0.1");

    // Killed outright, it leaves its lock and socket: the next start takes both over.
    process.kill(now.pid, "SIGKILL");
    expect(await until(() => !isProcessAlive(now.pid), 10_000)).toBe(true);
    expect(existsSync(path)).toBe(true);
    const again = await cli(cache, ["daemon", "start"]);
    expect(again.code, again.stderr).toBe(0);
    expect((await running(cache)).pid).not.toBe(now.pid);
  });

  it("stops itself and its servers after the idle time; --no-daemon starts none", {
    timeout: 180_000,
  }, async () => {
    // The daemon and its servers, taken while its server asks for the agent's first step: no
    // command of the test's own between the run and the idle time (a new CLI would reset it).
    let daemon: { pid: number; kept: number[] } | undefined;
    const { cache, repo, baseURL } = await setup({
      plan: planOf("a"),
      judge,
      agent: (request) => {
        const lock = join(cache, "daemon.lock");
        if (!daemon && existsSync(lock)) {
          const { pid } = JSON.parse(readFileSync(lock, "utf8")) as { pid: number };
          daemon = { pid, kept: descendantsOf(pid) };
        }
        return writer(request);
      },
    });
    const off = await cli(cache, [...runArgs("Write a.txt", repo, baseURL), "--no-daemon"]);
    expect(off.code, off.stderr).toBe(0);
    expect(existsSync(daemonSocketPath(cache))).toBe(false);
    expect(await status(cache)).toEqual({ running: false });

    const on = await cli(cache, runArgs("Write a.txt again", repo, baseURL), {
      TASKLEDGER_DAEMON_IDLE: "3",
    });
    expect(on.code, on.stderr).toBe(0);
    if (!daemon) throw new Error(`the run had no daemon: ${on.stderr}`);
    const { pid: daemonPid, kept } = daemon;
    expect(kept.map(commandLineOf).join("\n")).toContain("opencode");
    expect(await until(() => !isProcessAlive(daemonPid), 30_000)).toBe(true);
    expect(await until(() => kept.every((pid) => !isProcessAlive(pid)), 15_000)).toBe(true);
    expect(existsSync(daemonSocketPath(cache))).toBe(false);
  });
});
