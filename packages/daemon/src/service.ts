import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, statSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { dirname, join } from "node:path";
import type { AttemptProcess, Sandbox } from "@taskledger/core";
import {
  createOpencodeServerExecutor,
  type OpencodeServerExecutor,
  opencodeHostVariables,
  reclaimProcesses,
} from "@taskledger/executor";
import { createPricing } from "@taskledger/llm";
import { listDescendants, startTimeOf, type TrackedProcess } from "@taskledger/process";
import { createSandbox } from "@taskledger/sandbox";
import { takeLock } from "./lock.js";
import {
  type DaemonBuild,
  type DaemonExecutorSpec,
  type DaemonReply,
  type DaemonRequest,
  type DaemonSandboxSpec,
  type DaemonStatus,
  daemonSocketPath,
  readMessages,
  sendMessage,
} from "./protocol.js";

/** How long a daemon with no client and no attempt stays up, unless told. */
export const defaultDaemonIdleMs = 10 * 60_000;

// Executors no client uses, kept warm for the next run; past this the least recently used closes.
const maxUnusedExecutors = 4;

interface ExecutorEntry {
  executor: OpencodeServerExecutor;
  /** Pool size each connected client asked for. */
  users: Map<Socket, number>;
  lastUsed: number;
}

export interface DaemonServiceOptions {
  cacheDir: string;
  /** What it answers a client's hello with: the host's version and build. */
  build: DaemonBuild;
  idleMs?: number;
  /** Lines for the daemon's log. */
  log?: (line: string) => void;
}

/**
 * The per-user service that keeps rooms warm: one `OpencodeServerExecutor` per distinct agent
 * setting, whose servers (one per kept slot when confined) outlive the runs that lease them. Runs
 * talk to it over a Unix socket in the cache directory; a client that goes away has its attempts
 * aborted, and the service exits after `idleMs` with no client and no attempt.
 */
export class DaemonService {
  private readonly executors = new Map<string, ExecutorEntry>();
  private readonly sandboxes = new Map<string, Sandbox>();
  private readonly connections = new Set<Socket>();
  // Each connection's running attempts, by request id.
  private readonly attempts = new Map<Socket, Map<number, AbortController>>();
  private server: Server | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private socketInode: number | undefined;
  private releaseLock: (() => void) | undefined;
  private stopping: Promise<void> | undefined;
  // The `stop` requests to answer, with the daemon's process tree, once the stop is done.
  private readonly stopReplies: ((processes: TrackedProcess[]) => void)[] = [];
  // Aborted at stop: servers still starting for a `warm` are given up.
  private readonly lifetime = new AbortController();
  private startedServers = 0;
  readonly socketPath: string;
  private readonly idleMs: number;
  private readonly identity: DaemonBuild;
  private readonly startedAt = new Date().toISOString();
  /** Resolves once the service has stopped. */
  readonly stopped: Promise<void>;
  private resolveStopped!: () => void;

  constructor(private readonly options: DaemonServiceOptions) {
    this.identity = { version: options.build.version, build: options.build.build };
    this.socketPath = daemonSocketPath(options.cacheDir);
    this.idleMs = options.idleMs ?? defaultDaemonIdleMs;
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  /**
   * Takes the cache directory's daemon lock and listens; false when another live daemon holds it
   * (it serves instead). A lock or socket a dead daemon left is taken over.
   */
  async listen(): Promise<boolean> {
    mkdirSync(this.options.cacheDir, { recursive: true, mode: 0o700 });
    const release = takeLock(join(this.options.cacheDir, "daemon.lock"));
    if (release === undefined) return false;
    this.releaseLock = release;
    if (process.platform !== "win32") rmSync(this.socketPath, { force: true });
    mkdirSync(dirname(this.socketPath), { recursive: true });
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
    if (process.platform !== "win32") {
      // Only this user may ask it to run anything, whatever the directory's own mode.
      chmodSync(this.socketPath, 0o600);
      this.socketInode = statSync(this.socketPath).ino;
      // A socket removed under it (`taskledger clean`, a test's directory gone) ends the service.
      this.watchTimer = setInterval(() => this.checkSocket(), 2000);
    }
    this.idleFrom();
    this.log(`listening on ${this.socketPath} (pid ${process.pid}, idle ${this.idleMs} ms)`);
    return true;
  }

  status(): DaemonStatus {
    let servers = 0;
    let starts = 0;
    for (const entry of this.executors.values()) {
      servers += entry.executor.runningServers;
      starts += entry.executor.startedServers;
    }
    let attempts = 0;
    for (const running of this.attempts.values()) attempts += running.size;
    return {
      pid: process.pid,
      version: this.identity.version,
      build: this.identity.build,
      startedAt: this.startedAt,
      idleMs: this.idleMs,
      socket: this.socketPath,
      connections: this.connections.size,
      attempts,
      executors: this.executors.size,
      servers,
      serverStarts: this.startedServers + starts,
    };
  }

  /** Stops listening at once (a newer daemon may take the socket), then every server; idempotent. */
  stop(reason: string): Promise<void> {
    this.stopping ??= (async () => {
      this.log(`stopping: ${reason}`);
      // Servers, their sandboxes and relays, watchdogs: what a client asking to stop waits on.
      const tree = processTree();
      clearTimeout(this.idleTimer);
      clearInterval(this.watchTimer);
      this.lifetime.abort();
      this.server?.close();
      if (process.platform !== "win32" && this.ownsSocket()) {
        rmSync(this.socketPath, { force: true });
      }
      this.releaseLock?.();
      for (const running of this.attempts.values()) {
        for (const controller of running.values()) controller.abort(new Error(reason));
      }
      await Promise.allSettled([...this.executors.values()].map((e) => e.executor.close()));
      await Promise.allSettled([...this.sandboxes.values()].map((s) => s.close()));
      // Those still running now, and any started meanwhile (re-parented ones are in the first).
      for (const found of processTree()) {
        if (!tree.some((p) => p.pid === found.pid)) tree.push(found);
      }
      for (const reply of this.stopReplies.splice(0)) reply(tree);
      // Ended once the replies are written, not dropped with them; destroyed all the same.
      for (const socket of this.connections) {
        socket.end(() => socket.destroy());
        setTimeout(() => socket.destroy(), 1000).unref();
      }
      this.resolveStopped();
    })();
    return this.stopping;
  }

  private accept(socket: Socket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    this.connections.add(socket);
    this.attempts.set(socket, new Map());
    clearTimeout(this.idleTimer);
    socket.on("error", () => {});
    socket.on("close", () => this.drop(socket));
    readMessages<DaemonRequest>(socket, (request) => {
      void this.handle(socket, request).catch((error: unknown) => {
        this.log(`request ${request.type} failed: ${(error as Error).message}`);
      });
    });
  }

  /** A client gone (ended, or killed): its attempts are aborted, its pool seats given back. */
  private drop(socket: Socket): void {
    this.connections.delete(socket);
    for (const controller of this.attempts.get(socket)?.values() ?? []) {
      controller.abort(new Error("the run that asked for this attempt went away"));
    }
    this.attempts.delete(socket);
    for (const entry of this.executors.values()) {
      if (entry.users.delete(socket)) this.resizeFor(entry);
    }
    this.closeUnused();
    this.idleFrom();
  }

  private async handle(socket: Socket, request: DaemonRequest): Promise<void> {
    const reply = (message: DaemonReply) => sendMessage(socket, message);
    switch (request.type) {
      case "hello":
        reply({ type: "hello", ...this.identity, pid: process.pid });
        return;
      case "status":
        reply({ type: "status", id: request.id, status: this.status() });
        return;
      case "stop":
        // Answered once stopped (before the connection closes), with what the client waits on.
        this.stopReplies.push((processes) => reply({ type: "done", id: request.id, processes }));
        await this.stop("asked to stop");
        return;
      case "abort":
        this.attempts.get(socket)?.get(request.id)?.abort(new Error("cancelled"));
        return;
      case "warm": {
        const entry = this.executorFor(request.spec, socket);
        const sandbox = request.sandbox ? this.sandboxFor(request.sandbox) : undefined;
        entry.executor.warm({
          count: request.count,
          abortSignal: this.lifetime.signal,
          ...(sandbox ? { sandbox } : {}),
        });
        return;
      }
      case "reclaim":
        await this.reclaim(request.processes);
        reply({ type: "done", id: request.id });
        return;
      case "run":
        await this.run(socket, request);
        return;
    }
  }

  private async run(socket: Socket, request: Extract<DaemonRequest, { type: "run" }>) {
    const running = this.attempts.get(socket);
    if (running === undefined) return;
    const controller = new AbortController();
    running.set(request.id, controller);
    try {
      const entry = this.executorFor(request.spec, socket);
      const sandbox = request.sandbox ? this.sandboxFor(request.sandbox) : undefined;
      const { subTask, attempt, cwd } = request.attempt;
      this.log(`attempt ${attempt} of ${subTask.id} in ${cwd}`);
      const result = await entry.executor.run(request.prompt, {
        ...request.attempt,
        abortSignal: controller.signal,
        onEvent: (event) => sendMessage(socket, { type: "event", id: request.id, event }),
        onProcess: (process) => sendMessage(socket, { type: "process", id: request.id, process }),
        ...(sandbox ? { sandbox } : {}),
      });
      entry.lastUsed = Date.now();
      sendMessage(socket, { type: "result", id: request.id, result });
    } catch (error) {
      const failure = error as Error & { code?: string; isRetryable?: boolean };
      sendMessage(socket, {
        type: "failed",
        id: request.id,
        name: failure.name ?? "Error",
        ...(typeof failure.code === "string" ? { code: failure.code } : {}),
        message: failure.message ?? String(error),
        ...(failure.isRetryable === true ? { retryable: true } : {}),
      });
    } finally {
      running.delete(request.id);
      this.idleFrom();
    }
  }

  /** What a dead run left: its processes, but for this daemon's own running servers. */
  private async reclaim(processes: AttemptProcess[]): Promise<void> {
    const entries = [...this.executors.values()];
    const theirs = processes.filter((p) => !entries.some((e) => e.executor.owns(p)));
    // Also with no executor yet (a daemon started after the one that ran them died).
    await reclaimProcesses(theirs, 2000);
  }

  private executorFor(spec: DaemonExecutorSpec, socket: Socket): ExecutorEntry {
    const key = specKey(spec);
    let entry = this.executors.get(key);
    if (entry === undefined) {
      const executor = createOpencodeServerExecutor({
        ...spec.options,
        // A server idles as long as the daemon would: no longer, no shorter.
        serverIdleMs: this.idleMs,
        pricing: createPricing(spec.prices ? { prices: spec.prices } : {}),
      });
      entry = { executor, users: new Map(), lastUsed: Date.now() };
      this.executors.set(key, entry);
      this.log(`executor ${key.slice(0, 12)} for ${spec.options.model}`);
    }
    entry.lastUsed = Date.now();
    const size = Math.max(1, Math.floor(spec.options.poolSize ?? 4));
    if (entry.users.get(socket) !== size) {
      entry.users.set(socket, size);
      this.resizeFor(entry);
    }
    return entry;
  }

  /** Seats for every client using it at once: two runs never wait on each other's servers. */
  private resizeFor(entry: ExecutorEntry): void {
    const sizes = [...entry.users.values()];
    if (sizes.length > 0) entry.executor.resize(sizes.reduce((a, b) => a + b, 0));
  }

  private closeUnused(): void {
    const unused = [...this.executors.entries()]
      .filter(([, entry]) => entry.users.size === 0)
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    while (unused.length > maxUnusedExecutors) {
      const [key, entry] = unused.shift() as [string, ExecutorEntry];
      this.executors.delete(key);
      this.startedServers += entry.executor.startedServers;
      void entry.executor.close();
    }
  }

  private sandboxFor(spec: DaemonSandboxSpec): Sandbox {
    const key = JSON.stringify(spec);
    let sandbox = this.sandboxes.get(key);
    if (sandbox === undefined) {
      sandbox = createSandbox({ ...spec, onUnconfined: (line) => this.log(line) });
      this.sandboxes.set(key, sandbox);
    }
    return sandbox;
  }

  private idleFrom(): void {
    clearTimeout(this.idleTimer);
    if (this.stopping || this.connections.size > 0) return;
    this.idleTimer = setTimeout(() => void this.stop(`idle ${this.idleMs} ms`), this.idleMs);
  }

  private ownsSocket(): boolean {
    try {
      return statSync(this.socketPath).ino === this.socketInode;
    } catch {
      return false;
    }
  }

  private checkSocket(): void {
    if (!this.ownsSocket()) void this.stop("its socket was removed");
  }

  private log(line: string): void {
    this.options.log?.(`${new Date().toISOString()} ${line}`);
  }
}

/** This process and its descendants, each with its start time. */
function processTree(): TrackedProcess[] {
  const self = startTimeOf(process.pid);
  return [
    ...(self === undefined ? [] : [{ pid: process.pid, startTime: self }]),
    ...listDescendants(process.pid),
  ];
}

/**
 * Equal keys for settings whose servers are interchangeable: the options, and the host variables
 * the servers inherit (not the whole environment, which differs in ways no server sees).
 */
export function specKey(spec: DaemonExecutorSpec): string {
  const { hostEnv, poolSize, serverIdleMs, ...options } = spec.options;
  const variables = opencodeHostVariables(spec.options, [
    spec.options.model,
    ...(spec.options.agentModels ?? []),
  ]);
  return createHash("sha256")
    .update(JSON.stringify({ options, variables, prices: spec.prices ?? null }))
    .digest("hex");
}
