import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { createOpencodeClient, OpencodeClient } from "@opencode-ai/sdk/v2/client";
import { HeadTailBuffer, type Sandbox, type SandboxedLaunch } from "@taskledger/core";
import type { AttemptWatchdog } from "@taskledger/process";
import {
  attemptMarker,
  listDescendants,
  processesWithEnv,
  signalAttempt,
  signalGroup,
  signalTracked,
  spawnGroup,
  startTimeOf,
  type TrackedProcess,
} from "@taskledger/process";
import type { ProcessEnd } from "../../agent/attempt-outcome.js";
import { removeDir } from "../../agent/attempt-temp-dir.js";
import type { AttemptDirs } from "../attempt-dirs.js";
import { freePort } from "./free-port.js";

export interface ServerStartInput {
  binary: string;
  /** The hermetic environment (`buildRunEnv`); the password is added here. */
  env: Record<string, string>;
  dirs: AttemptDirs;
  plugins: boolean;
  startTimeoutMs: number;
  maxStderrChars: number;
  watchdog: AttemptWatchdog;
  /** Runs the server inside the OS sandbox, writing only in `directory` and its own root. */
  confine?: { sandbox: Sandbox; directory: string };
  /** The server's directory is kept for diagnosis: a dead host's watchdog leaves it. */
  keepDirs?: boolean;
}

/** How a server that never came up ended: what `decideOutcome` reads for the attempt waiting on it. */
export type ServerStartFailure = ProcessEnd & { stderr: string };

const listening = /opencode server listening on (http:\/\/127\.0\.0\.1:\d+)/;

/**
 * One `opencode serve` process on 127.0.0.1, behind a random password, leading its own process
 * group, guarded by the watchdog for its whole life so it never outlives its host.
 */
export class OpencodeServer {
  /** Attempts run on it so far. */
  attempts = 0;
  /** Set once the process has exited. */
  ended: ProcessEnd | undefined;
  // One per attempt running on it, removed when the attempt ends, so none piles up.
  private readonly exitListeners = new Set<(end: ProcessEnd) => void>();
  /** Every process seen under it (tool commands), so a stop kills them too. */
  readonly tracked: TrackedProcess[] = [];
  /** The environment entry (its TMPDIR) that it and every process it starts carry. */
  readonly marker: string;

  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
    readonly startTime: string,
    readonly url: string,
    private readonly password: string,
    readonly dirs: AttemptDirs,
    /** What opencode put in its TMPDIR while starting (its native library): kept between attempts. */
    private readonly tempAtStart: ReadonlySet<string>,
    readonly exited: Promise<ProcessEnd>,
    private readonly stderr: HeadTailBuffer,
    private readonly watchdog: AttemptWatchdog,
    private readonly makeClient: typeof createOpencodeClient,
    /** Its OS sandbox, when confined: what it refused, and the bridge the host reaches it by. */
    readonly confinement: SandboxedLaunch | undefined,
    /** `pid:startTime` of the processes that are the server itself, seen when it began listening. */
    private readonly own: ReadonlySet<string> = new Set(),
  ) {
    this.marker = `TMPDIR=${dirs.tmp}`;
  }

  /** Starts a server and waits for it to listen; bounded by `startTimeoutMs` and `signal`. */
  static async start(
    input: ServerStartInput,
    signal: AbortSignal,
  ): Promise<OpencodeServer | ServerStartFailure> {
    const password = randomBytes(24).toString("base64url");
    const port = await freePort();
    const args = ["serve", "--hostname", "127.0.0.1", "--port", String(port)];
    if (!input.plugins) args.push("--pure");
    const env = { ...input.env, OPENCODE_SERVER_PASSWORD: password, PWD: input.dirs.root };
    const confinement = await input.confine?.sandbox.wrap({
      file: input.binary,
      args,
      cwd: input.dirs.root,
      env,
      write: [input.confine.directory],
      expose: port,
    });
    // From here to `watch`, one synchronous stretch: no await lets the host die unguarded.
    input.watchdog.prepare();
    const child = spawnGroup(confinement?.file ?? input.binary, confinement?.args ?? args, {
      cwd: input.dirs.root,
      env: confinement?.env ?? env,
      stdin: "",
    });
    const pid = child.pid;
    const marker = attemptMarker(input.env);
    if (pid !== undefined) {
      const dir = input.keepDirs ? undefined : input.dirs.root;
      input.watchdog.watch(pid, { pid, startTime: startTimeOf(pid) ?? "" }, marker, dir);
    }
    const stderr = new HeadTailBuffer(0, input.maxStderrChars);
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    const exited = new Promise<ProcessEnd>((resolve) => {
      child.once("error", (error: NodeJS.ErrnoException) =>
        resolve({
          exitCode: null,
          signal: null,
          spawnError:
            error.code === "ENOENT"
              ? `opencode binary not found at ${input.binary}; install opencode-ai or pass binaryPath`
              : `could not start opencode: ${error.message}`,
        }),
      );
      child.once("exit", (code, exitSignal) => resolve({ exitCode: code, signal: exitSignal }));
    });
    const url = await new Promise<string | undefined>((resolve) => {
      let seen = "";
      const onData = (chunk: Buffer) => {
        seen = (seen + chunk.toString("utf8")).slice(-4000);
        const match = listening.exec(seen);
        if (match) done(match[1]);
      };
      const timer = setTimeout(() => done(undefined), input.startTimeoutMs);
      const onAbort = () => done(undefined);
      const done = (value: string | undefined) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        child.stdout?.off("data", onData);
        resolve(value);
      };
      child.stdout?.on("data", onData);
      signal.addEventListener("abort", onAbort, { once: true });
      void exited.then(() => done(undefined));
    });
    // Its later output is not read; draining keeps a full pipe from blocking it.
    child.stdout?.resume();
    // A server never holds its host's event loop: a host that ends without close() exits, and its
    // exit hook and watchdog stop the server. An attempt's own requests keep the host up meanwhile.
    child.unref();
    for (const pipe of [child.stdout, child.stderr])
      (pipe as { unref?: () => void } | null)?.unref?.();
    const startTime = pid === undefined ? undefined : startTimeOf(pid);
    if (url === undefined || pid === undefined || startTime === undefined) {
      if (pid !== undefined) signalGroup(pid, "SIGKILL");
      const end = await exited;
      input.watchdog.release(pid);
      await confinement?.release();
      const timedOut = !signal.aborted && end.exitCode === null && end.spawnError === undefined;
      return {
        ...end,
        ...(timedOut
          ? { serverLost: `the opencode server did not start in ${input.startTimeoutMs} ms` }
          : {}),
        stderr: stderr.toString(),
      };
    }
    const tempAtStart = new Set(await readdir(input.dirs.tmp).catch(() => []));
    // What runs under it once it listens is the server itself (confined: the sandbox's launcher,
    // its bridges and opencode), never an attempt's tools to be killed when the attempt ends.
    const own = new Set(listDescendants(pid).map((p) => `${p.pid}:${p.startTime}`));
    // The SDK is loaded with the first server, not when the package is imported (import cost).
    const { createOpencodeClient } = await import("@opencode-ai/sdk/v2/client");
    // Confined, it listens in its own network namespace: the host reaches it through the bridge.
    const reached =
      confinement?.exposedPort === undefined
        ? url
        : url.replace(/:\d+$/, `:${confinement.exposedPort}`);
    const server = new OpencodeServer(
      child,
      pid,
      startTime,
      reached,
      password,
      input.dirs,
      tempAtStart,
      exited,
      stderr,
      input.watchdog,
      createOpencodeClient,
      confinement,
      own,
    );
    void exited.then((end) => {
      server.ended = end;
      for (const listener of server.exitListeners) listener(end);
      server.exitListeners.clear();
    });
    return server;
  }

  /** Calls `listener` when the server exits (at once if it has); returns how to stop listening. */
  onExit(listener: (end: ProcessEnd) => void): () => void {
    const ended = this.ended;
    if (ended !== undefined) {
      queueMicrotask(() => listener(ended));
      return () => {};
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** A client for the server's instance of `directory`. */
  client(directory: string): OpencodeClient {
    const token = Buffer.from(`opencode:${this.password}`).toString("base64");
    return this.makeClient({
      baseUrl: this.url,
      directory,
      headers: { Authorization: `Basic ${token}` },
    });
  }

  /** Notes a process the server started (a tool's), for the watchdog and for `stop`. */
  track(process: TrackedProcess): void {
    this.tracked.push(process);
    // Tools of earlier attempts were killed when those ended; keep the list bounded.
    if (this.tracked.length > 1000) this.tracked.shift();
    this.watchdog.watch(this.pid, process, this.marker);
  }

  /** What the server wrote to stderr (its tail). */
  stderrText(): string {
    return this.stderr.toString();
  }

  /** Empties TMPDIR of what the last attempt's tools left, keeping what opencode put there at start. */
  async cleanTemp(): Promise<void> {
    const names = await readdir(this.dirs.tmp).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((name) => !this.tempAtStart.has(name))
        .map((name) => removeDir(join(this.dirs.tmp, name))),
    );
  }

  /** SIGKILL the server, its group and every process seen under it, now. */
  kill(): void {
    signalAttempt(this.pid, this.tracked, "SIGKILL", this.marker);
  }

  /** True for a process that is the server itself (not one of an attempt's tools). */
  isOwn(process: TrackedProcess): boolean {
    return (
      process.pid === this.pid ||
      this.own.has(`${process.pid}:${process.startTime}`) ||
      this.confinement?.isHelper?.(process.pid) === true
    );
  }

  /** SIGKILLs what its tools left running anywhere (found by its TMPDIR); returns them. */
  killOrphans(): TrackedProcess[] {
    const orphans = processesWithEnv(this.marker).filter((p) => !this.isOwn(p));
    for (const process of orphans) signalTracked(process, "SIGKILL");
    return orphans;
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves once it has exited, and releases its guard. */
  async stop(graceMs: number): Promise<void> {
    if (this.ended === undefined) {
      signalAttempt(this.pid, this.tracked, "SIGTERM", this.marker);
      const timer = setTimeout(() => this.kill(), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // The group may hold stragglers after the leader has gone, and tools may outlive it elsewhere.
    this.kill();
    this.killOrphans();
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    this.watchdog.release(this.pid);
    await this.confinement?.release();
  }
}
