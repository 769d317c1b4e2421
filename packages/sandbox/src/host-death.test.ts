import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  alive,
  commandLineOf,
  killProcessesUnder,
  pollUntil,
  processesUnder,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createSandbox } from "./os-sandbox.js";

const host = resolve(import.meta.dirname, "test-support/sandbox-host.ts");
const built = resolve(import.meta.dirname, "../dist/index.js");

const probe = createSandbox({ mode: "auto" });
const status = await probe.status();
await probe.close();

/** A TCP server on a free port; closed at once when `closed` (its port then leads nowhere). */
async function tcpPort(closed: boolean): Promise<{ port: number; server: Server }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  if (closed) await new Promise((resolve) => server.close(resolve));
  return { port, server };
}

/** A bridge shaped as the runtime starts it, re-parented as a dead host's is; resolves its pid. */
async function strayBridge(dir: string, port: number): Promise<number> {
  const socket = join(dir, `claude-http-${randomBytes(8).toString("hex")}.sock`);
  const child = spawn(
    "sh",
    [
      "-c",
      `socat UNIX-LISTEN:${socket},fork,reuseaddr TCP:localhost:${port},keepalive,keepidle=10,keepintvl=5,keepcnt=3 >/dev/null 2>&1 & echo $!`,
    ],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  const pid = await new Promise<number>((done) =>
    child.stdout.on("data", (chunk: Buffer) => done(Number(chunk.toString().trim()))),
  );
  await pollUntil(
    async () => existsSync(socket),
    (there) => there,
  );
  return pid;
}

/** The bridge watchdogs this process started that still run. */
function ownWatchdogs(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => commandLineOf(pid).includes("taskledger-host-watchdog"))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
      } catch {
        return false;
      }
    });
}

/** The runtime's `srt-obs-*` directories whose socket `pid` listens on: the ones it made. */
function observerDirsOf(pid: number): string[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      } catch {
        return undefined;
      }
    }),
  );
  return readFileSync("/proc/net/unix", "utf8")
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, , , , , , inode, path]) => inodes.has(inode) && /\/srt-obs-\w+\//.test(path ?? ""))
    .map(([, , , , , , , path]) => dirname(path as string));
}

/** The words of what runs under `root` (bridges carry the host's environment, which names it). */
async function runningUnder(root: string): Promise<string[]> {
  return (await processesUnder(root)).map((pid) => commandLineOf(pid).replaceAll("\0", " ").trim());
}

describe.runIf(process.platform === "linux" && (status.confined || process.env.CI))(
  "the sandbox's host-side processes",
  () => {
    it.each(["SIGKILL", "SIGTERM"] as const)(
      "do not outlive a host ended by %s that never closed its sandbox",
      async (signal) => {
        expect(existsSync(built), "run `npm run build` first").toBe(true);
        const root = await mkdtemp(join(tmpdir(), "taskledger-sandbox-host-"));
        const child = spawn(process.execPath, [host, root], {
          cwd: root,
          // Every process the host starts inherits this, so /proc finds it wherever it went.
          env: { ...process.env, TASKLEDGER_TEST_HOST: root },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stderr = "";
        child.stderr.on("data", (chunk) => {
          stderr += chunk;
        });
        const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_, s) => r(s)));
        try {
          const ready = await new Promise<boolean>((done) => {
            child.stdout.on("data", (chunk: Buffer) => done(chunk.toString().includes("ready")));
            child.on("exit", () => done(false));
          });
          expect(ready, stderr).toBe(true);
          const before = await runningUnder(root);
          // The runtime's bridge to its proxy, and the confined command.
          expect(before.filter((line) => /^\S*socat UNIX-LISTEN:/.test(line))).not.toEqual([]);
          expect(
            before.some((line) => line.startsWith("bwrap") || line.startsWith("sleep 300")),
          ).toBe(true);

          // The runtime's violation observer: a directory under the temp directory, with a socket.
          const observers = observerDirsOf(child.pid as number);
          expect(observers).toHaveLength(1);
          // A host with no SIGTERM listener of its own ends by it, as Node's default has it.
          process.kill(child.pid as number, signal);
          expect(await exited).toBe(signal);
          const left = await pollUntil(
            () => runningUnder(root),
            (lines) => lines.length === 0,
          );
          expect(left).toEqual([]);
          // What it left in the temp directory (its launch's, the runtime's proxy socket) goes when a
          // sandbox next starts.
          const leftovers = () =>
            readdirSync(tmpdir()).filter((name) =>
              [`taskledger-sandbox-${child.pid}-`, `srt-mux-${child.pid}-`].some((prefix) =>
                name.startsWith(prefix),
              ),
            );
          expect(leftovers()).not.toEqual([]);
          const next = createSandbox({ mode: "required" });
          await next.status();
          await next.close();
          expect(leftovers()).toEqual([]);
          expect(observers.filter((dir) => existsSync(dir))).toEqual([]);
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
          await killProcessesUnder(root);
          await rm(root, { recursive: true, force: true });
        }
      },
      60_000,
    );

    it("a bridge a dead host left is killed when a sandbox next starts; a live one is not", async () => {
      const root = await mkdtemp(join(tmpdir(), "taskledger-sandbox-stray-"));
      const live = await tcpPort(false);
      const strays: number[] = [];
      try {
        const dead = await strayBridge(root, (await tcpPort(true)).port);
        const kept = await strayBridge(root, live.port);
        strays.push(dead, kept);
        const sandbox = createSandbox({ mode: "required" });
        await sandbox.status();
        expect(ownWatchdogs()).toHaveLength(1);
        await sandbox.close();
        // Closed: the bridges are stopped and their watchdog let go.
        expect(
          await pollUntil(
            async () => ownWatchdogs(),
            (pids) => pids.length === 0,
          ),
        ).toEqual([]);
        expect(
          await pollUntil(
            async () => alive(dead),
            (on) => !on,
          ),
        ).toBe(false);
        expect(alive(kept)).toBe(true);
      } finally {
        for (const pid of strays.filter(alive)) process.kill(pid, "SIGKILL");
        live.server.close();
        await rm(root, { recursive: true, force: true });
      }
    });

    it("an observer directory a dead process left is removed when a sandbox next starts; a live one is not", async () => {
      const dead = await mkdtemp(join(tmpdir(), "srt-obs-"));
      const live = await mkdtemp(join(tmpdir(), "srt-obs-"));
      const holder = createServer();
      try {
        // Bound by a process then killed outright: the socket file stays, nothing serves it.
        const socket = join(dead, "s0123abcd.sock");
        const owner = spawn(process.execPath, [
          "-e",
          "require('node:net').createServer().listen(process.argv[1])",
          socket,
        ]);
        await pollUntil(
          async () => existsSync(socket),
          (there) => there,
        );
        owner.kill("SIGKILL");
        await new Promise((done) => owner.once("exit", done));
        await new Promise<void>((done) => holder.listen(join(live, "s4567ef01.sock"), done));
        const sandbox = createSandbox({ mode: "required" });
        await sandbox.status();
        await sandbox.close();
        expect(existsSync(dead)).toBe(false);
        expect(existsSync(join(live, "s4567ef01.sock"))).toBe(true);
      } finally {
        holder.close();
        await rm(dead, { recursive: true, force: true });
        await rm(live, { recursive: true, force: true });
      }
    });
  },
);
