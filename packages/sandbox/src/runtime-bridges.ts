import { lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import {
  commandLineOf,
  type ProcessIdentity,
  processStartTime,
  sweepDeadProcessDirs,
} from "@taskledger/core";

/**
 * A host-side bridge the runtime starts on Linux, a child of the host that outlives it:
 * `socat UNIX-LISTEN:<tmp>/claude-http-<hex>.sock,fork,reuseaddr TCP:localhost:<port>,…` to the
 * proxy the host serves in-process (one for SOCKS too when the ports differ).
 */
interface Bridge extends Required<ProcessIdentity> {
  socket: string;
  port: number;
}

const listenWord = /^UNIX-LISTEN:(\/.*\/claude-(?:http|socks)-[0-9a-f]{16}\.sock),fork,reuseaddr$/;
const targetWord = /^TCP:localhost:(\d+),/;

/** The runtime's bridges of every process on this machine (Linux; elsewhere it starts none). */
function runtimeBridges(): Bridge[] {
  if (process.platform !== "linux") return [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: Bridge[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const [file = "", listen = "", target = ""] = commandLineOf(pid);
    if (basename(file) !== "socat") continue;
    const socket = listenWord.exec(listen)?.[1];
    const port = targetWord.exec(target)?.[1];
    const startTime = socket && port ? processStartTime(pid) : undefined;
    if (socket && port && startTime) found.push({ pid, startTime, socket, port: Number(port) });
  }
  return found;
}

/** This host's bridges, by the socket paths the runtime chose for them. */
export function bridgesAt(sockets: readonly (string | undefined)[]): Required<ProcessIdentity>[] {
  const own = new Set(sockets.filter((socket) => socket !== undefined));
  if (own.size === 0) return [];
  return runtimeBridges()
    .filter((bridge) => own.has(bridge.socket))
    .map(({ pid, startTime }) => ({ pid, startTime }));
}

/**
 * Kills the bridges a dead host left (killed before its watchdog took them) and removes their
 * sockets, and the runtime's proxy socket of a dead host (`srt-mux-<pid>-<n>.sock`). A bridge
 * whose proxy no longer listens leads nowhere: the proxy lives in the process that started it, so
 * that process is gone, whoever it was (this runtime is Claude Code's too).
 */
export async function sweepDeadBridges(): Promise<void> {
  await sweepDeadProcessDirs(tmpdir(), "srt-mux-");
  sweepDeadObserverDirs();
  const bridges = runtimeBridges();
  if (bridges.length === 0) return;
  const listening = listeningPorts();
  for (const bridge of bridges) {
    if (listening.has(bridge.port)) continue;
    if (processStartTime(bridge.pid) !== bridge.startTime) continue;
    try {
      process.kill(bridge.pid, "SIGKILL");
    } catch {
      // Gone already, or another user's.
      continue;
    }
    try {
      rmSync(bridge.socket, { force: true });
    } catch {
      // Another user's directory: the socket is theirs to remove.
    }
  }
}

// An observer directory with no socket yet is one being made, unless it is older than this.
const unboundGraceMs = 60_000;

/**
 * Removes the runtime's violation-observer directories (`<tmp>/srt-obs-XXXXXX/s<hex>.sock`, made
 * at each start of the runtime on Linux) whose process is gone: a process killed outright leaves
 * its directory behind. The socket in it is served by the process that made it, so a directory
 * whose socket nothing is bound to any more (`/proc/net/unix`) is a dead process's, whoever's
 * runtime it was; only this user's are touched.
 */
export function sweepDeadObserverDirs(parent = tmpdir()): void {
  if (process.platform !== "linux") return;
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => /^srt-obs-[A-Za-z0-9]{6}$/.test(name));
  } catch {
    return;
  }
  if (names.length === 0) return;
  const bound = boundUnixPaths();
  if (bound === undefined) return;
  const uid = process.getuid?.();
  for (const name of names) {
    const dir = join(parent, name);
    try {
      const info = lstatSync(dir);
      if (!info.isDirectory() || info.uid !== uid) continue;
      const sockets = readdirSync(dir).filter((entry) => /^s[0-9a-f]+\.sock$/.test(entry));
      if (sockets.some((entry) => bound.has(join(dir, entry)))) continue;
      if (sockets.length === 0 && Date.now() - info.mtimeMs < unboundGraceMs) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Removed meanwhile, or not ours to read.
    }
  }
}

/** The paths Unix sockets in this network namespace are bound to; undefined when unreadable. */
function boundUnixPaths(): Set<string> | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/net/unix", "utf8");
  } catch {
    return undefined;
  }
  const paths = new Set<string>();
  for (const line of text.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path
    const path = line.trim().split(/\s+/)[7];
    if (path?.startsWith("/")) paths.add(path);
  }
  return paths;
}

/** The TCP ports something listens on in this network namespace (`/proc/net/tcp`, state 0A). */
function listeningPorts(): Set<number> {
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const [, local = "", , state] = line.trim().split(/\s+/);
      if (state === "0A") ports.add(Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16));
    }
  }
  return ports;
}
