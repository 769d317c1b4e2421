import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, statSync, truncateSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { ExecutorError } from "@taskledger/core";
import {
  isRunning,
  listDescendants,
  startTimeOf,
  type TrackedProcess,
  waitForExit,
} from "@taskledger/process";
import {
  type DaemonBuild,
  type DaemonReply,
  type DaemonRequest,
  type DaemonStatus,
  daemonSocketPath,
  readMessages,
  sendMessage,
} from "./protocol.js";

/** Requests that carry an id, so their replies find them. */
type Addressed = Extract<DaemonRequest, { id: number }>;
type Unaddressed<T> = T extends { id: number } ? Omit<T, "id"> : never;

/** One connection to the daemon, shared by a process's attempts; replies are routed by id. */
export class DaemonConnection {
  private nextId = 1;
  private readonly handlers = new Map<number, (reply: DaemonReply | undefined) => void>();
  private lost = false;

  constructor(
    private readonly socket: Socket,
    /** The daemon's pid, for `status` and the tests that kill it. */
    readonly pid: number,
  ) {
    readMessages<DaemonReply>(socket, (reply) => {
      if ("id" in reply) this.handlers.get(reply.id)?.(reply);
    });
    socket.on("close", () => {
      this.lost = true;
      for (const handler of [...this.handlers.values()]) handler(undefined);
      this.handlers.clear();
    });
    socket.on("error", () => {});
    socket.unref();
  }

  /** True once the daemon has gone (killed, stopped, replaced). */
  get closed(): boolean {
    return this.lost;
  }

  /**
   * Sends a request; `onReply` gets each reply to it, then `undefined` if the connection is lost
   * first. Returns the request's id and how to stop listening.
   */
  request(
    message: Unaddressed<Addressed>,
    onReply: (reply: DaemonReply | undefined) => void,
  ): { id: number; done: () => void } {
    const id = this.nextId++;
    if (this.lost) {
      queueMicrotask(() => onReply(undefined));
      return { id, done: () => {} };
    }
    this.handlers.set(id, onReply);
    // A request in flight keeps the process up; an idle connection never does.
    this.socket.ref();
    sendMessage(this.socket, { ...message, id } as DaemonRequest);
    return {
      id,
      done: () => {
        this.handlers.delete(id);
        if (this.handlers.size === 0) this.socket.unref();
      },
    };
  }

  /** One request, its one reply; rejects when the daemon goes away first. */
  ask(message: Unaddressed<Addressed>): Promise<DaemonReply> {
    return new Promise((resolve, reject) => {
      const sent = this.request(message, (reply) => {
        sent.done();
        if (reply === undefined) reject(new ExecutorError("the taskledger daemon went away"));
        else resolve(reply);
      });
    });
  }

  /** Sends a message that has no reply (`warm`, `abort`). */
  send(message: DaemonRequest): void {
    sendMessage(this.socket, message);
  }

  close(): void {
    this.socket.end();
    this.socket.unref();
  }
}

/** Where the daemon is and which one a client wants. */
export interface DaemonAddress {
  cacheDir: string;
  /** The client's own build: a daemon of another is stopped and replaced. */
  build: DaemonBuild;
}

export interface ConnectOptions extends DaemonAddress {
  /** Start a daemon when none answers (a run); false only looks (`status`, `stop`). */
  start: boolean;
  /**
   * What `node` runs to serve in the foreground (the built CLI: `[bin, "daemon", "serve"]`);
   * `--idle <seconds>` is appended when given. Without it no daemon can be started.
   */
  serveCommand?: readonly string[];
  /** The idle time a daemon started here gets; default its own (10 minutes). */
  idleSeconds?: number;
  abortSignal?: AbortSignal;
}

/**
 * The cache directory's daemon, started when none answers; one of another version or build is
 * stopped and replaced. Undefined when none runs and `start` is false.
 */
export async function connectDaemon(
  options: ConnectOptions,
): Promise<DaemonConnection | undefined> {
  const path = daemonSocketPath(options.cacheDir);
  const own = options.build;
  const found = await openConnection(path, own);
  if (found !== undefined) {
    if (found.version === own.version && found.build === own.build) return found.connection;
    // Another taskledger's daemon: it gives up the socket at once, then stops its servers.
    await found.connection.ask({ type: "stop" }).catch(() => {});
    found.connection.close();
  }
  if (!options.start) return undefined;
  startDaemon(options);
  // It listens within a second or two; a starting one elsewhere may win the lock: either answers.
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    options.abortSignal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = await openConnection(path, own);
    if (started !== undefined) {
      if (started.version === own.version && started.build === own.build) return started.connection;
      started.connection.close();
    }
  }
  throw new ExecutorError(
    `the taskledger daemon did not start in 20 s; see ${join(options.cacheDir, "daemon.log")}, or pass --no-daemon`,
  );
}

/** The daemon's status, or undefined when none runs. */
export async function daemonStatus(address: DaemonAddress): Promise<DaemonStatus | undefined> {
  const found = await openConnection(daemonSocketPath(address.cacheDir), address.build);
  if (found === undefined) return undefined;
  try {
    const reply = await found.connection.ask({ type: "status" });
    return reply.type === "status" ? reply.status : undefined;
  } finally {
    found.connection.close();
  }
}

/** A daemon `stopDaemon` stopped. */
export interface StoppedDaemon {
  pid: number;
  /** Its status when it was asked to stop; undefined when it did not answer. */
  status: DaemonStatus | undefined;
  /** Processes of its tree still running when the wait ended: none unless it timed out. */
  left: number[];
}

/** How long `stopDaemon` waits, by default, for the daemon's whole process tree to end. */
export const daemonStopTimeoutMs = 15_000;

/**
 * Stops the daemon if one runs, and resolves once it and its whole process tree (its servers,
 * their sandboxes and relays, its watchdogs) have ended, or after `timeoutMs` with those left.
 */
export async function stopDaemon(
  address: DaemonAddress,
  timeoutMs = daemonStopTimeoutMs,
): Promise<StoppedDaemon | undefined> {
  const found = await openConnection(daemonSocketPath(address.cacheDir), address.build);
  if (found === undefined) return undefined;
  const deadline = Date.now() + timeoutMs;
  const { pid } = found.connection;
  const status = await found.connection.ask({ type: "status" }).catch(() => undefined);
  // Seen from here too, for a daemon that does not name its tree (another build, or gone first).
  const self = startTimeOf(pid);
  const tree: TrackedProcess[] = [
    ...(self === undefined ? [] : [{ pid, startTime: self }]),
    ...listDescendants(pid),
  ];
  const stopped = await Promise.race([
    found.connection.ask({ type: "stop" }).catch(() => undefined),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), timeoutMs).unref()),
  ]);
  found.connection.close();
  for (const process of stopped?.type === "done" ? (stopped.processes ?? []) : []) {
    if (!tree.some((p) => p.pid === process.pid && p.startTime === process.startTime)) {
      tree.push(process);
    }
  }
  await waitForExit(tree, Math.max(0, deadline - Date.now()));
  return {
    pid,
    status: status?.type === "status" ? status.status : undefined,
    left: tree.filter(isRunning).map((p) => p.pid),
  };
}

/** A connection that said hello, or undefined when nothing (or nothing of ours) answers. */
async function openConnection(
  path: string,
  build: DaemonBuild,
): Promise<{ connection: DaemonConnection; version: string; build: string } | undefined> {
  if (process.platform !== "win32" && !existsSync(path)) return undefined;
  const socket = await new Promise<Socket | undefined>((resolve) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, 2000);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("error", () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
  if (socket === undefined) return undefined;
  const hello = await new Promise<DaemonReply | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 5000);
    readMessages<DaemonReply>(socket, (reply) => {
      clearTimeout(timer);
      resolve(reply);
    });
    socket.once("close", () => resolve(undefined));
    sendMessage(socket, { type: "hello", ...build });
  });
  if (hello?.type !== "hello") {
    socket.destroy();
    return undefined;
  }
  socket.removeAllListeners("data");
  return {
    connection: new DaemonConnection(socket, hello.pid),
    version: hello.version,
    build: hello.build,
  };
}

/** Starts `taskledger daemon serve` detached, its output appended to the cache directory's log. */
function startDaemon(options: ConnectOptions): void {
  const serve = options.serveCommand;
  if (serve === undefined) {
    throw new ExecutorError("the taskledger daemon needs the built CLI (bin.js is missing)");
  }
  mkdirSync(options.cacheDir, { recursive: true, mode: 0o700 });
  const logPath = join(options.cacheDir, "daemon.log");
  // Bounded: a log past 1 MB starts again.
  if ((statSync(logPath, { throwIfNoEntry: false })?.size ?? 0) > 1024 * 1024)
    truncateSync(logPath, 0);
  const log = openSync(logPath, "a", 0o600);
  try {
    const args = [...serve];
    if (options.idleSeconds !== undefined) args.push("--idle", String(options.idleSeconds));
    const child = spawn(process.execPath, args, {
      detached: true,
      stdio: ["ignore", log, log],
      env: { ...process.env, TASKLEDGER_CACHE_DIR: options.cacheDir },
      cwd: options.cacheDir,
    });
    child.on("error", () => {});
    child.unref();
  } finally {
    closeSync(log);
  }
}
