import { type ChildProcess, spawn } from "node:child_process";
import { dirname } from "node:path";

/** One command to run to its end, its output collected. */
export interface RunRequest {
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to its stdin, which is then closed. */
  input: string | Uint8Array;
  /** Stdout kept; past it the command is killed and `overLimit` set. */
  maxOutputBytes: number;
  /** Characters of stderr kept, the last ones. */
  stderrTail: number;
  abortSignal?: AbortSignal | undefined;
}

export interface RunOutput {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  overLimit: boolean;
  /** Killed because `abortSignal` fired before it ended. */
  aborted: boolean;
  /** It could not start (or its runner stopped under it). */
  error?: { code?: string; message: string };
}

/**
 * Runs a command in a small helper process once that helper is up, in this process until then.
 * Node forks the whole process for every child, copying its page tables on the event loop's
 * thread: 4 ms a git call at 160 MB, 30 ms at 800 MB (an editor, an Electron app). The helper is
 * a bare Node process, forking in 1.5 ms off this thread; it leaves when idle or when this process
 * ends (killing what it runs), and a helper that cannot start leaves every call here.
 */
export function runCollected(request: RunRequest): Promise<RunOutput> {
  if (request.abortSignal?.aborted) return Promise.resolve(abortedOutput());
  return runner.run(request);
}

/**
 * Starts the helper now and keeps it while held (a run, a worker), so the first calls of a busy
 * moment find it up; once let go, it leaves after its idle time as before.
 */
export function holdGitRunner(): () => void {
  return runner.hold();
}

/** Whether calls go through the helper now (for tests and benches). */
export function gitRunnerState(): { helperPid: number | undefined; viaHelper: boolean } {
  return runner.state();
}

// `off`: every command is forked by this process, as before the helper.
export const helperSwitch = "TASKLEDGER_GIT_HELPER";
// Below this much resident memory the host forks git about as fast as the helper answers (2 ms).
const defaultMinHostBytes = 128 * 1024 * 1024;
// Idle this long, the helper leaves: no process of ours outlives the work by more than this.
const defaultIdleMs = 2000;
// A helper that stops on its own this often is not started again.
const maxUnexpectedExits = 3;
// A helper not ready by then is stopped for good.
const startBoundMs = 10_000;

/**
 * Whether this process's executable is Node itself, so `-e` runs the helper. Not in Electron
 * (its fuses may refuse to run as Node, and it would start the app again) nor in a single
 * executable application (its own code would get the arguments).
 */
function plainNode(): boolean {
  if (process.versions.electron || process.release.name !== "node") return false;
  const sea = (
    process as { getBuiltinModule?: (id: string) => { isSea?: () => boolean } | undefined }
  ).getBuiltinModule?.("node:sea");
  return !sea?.isSea?.();
}

const abortedOutput = (): RunOutput => ({
  code: null,
  signal: "SIGKILL",
  stdout: Buffer.alloc(0),
  stderr: "",
  overLimit: false,
  aborted: true,
});

/** The collection both sides do: the same code runs here and, as text, in the helper. */
function collect(
  spawnChild: typeof spawn,
  request: Omit<RunRequest, "abortSignal">,
  done: (output: RunOutput) => void,
): () => void {
  let child: ReturnType<typeof spawn>;
  const out: Buffer[] = [];
  let bytes = 0;
  let stderr = "";
  let overLimit = false;
  let aborted = false;
  let error: { code?: string; message: string } | undefined;
  try {
    child = spawnChild(request.command, [...request.args], {
      cwd: request.cwd,
      env: request.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
  } catch (thrown) {
    const e = thrown as NodeJS.ErrnoException;
    done({
      code: null,
      signal: null,
      stdout: Buffer.alloc(0),
      stderr: "",
      overLimit: false,
      aborted: false,
      error: { ...(e.code ? { code: e.code } : {}), message: String(e.message) },
    });
    return () => {};
  }
  child.stdout?.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > request.maxOutputBytes) {
      overLimit = true;
      child.kill("SIGKILL");
    } else out.push(chunk);
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-request.stderrTail);
  });
  child.stdin?.on("error", () => {});
  child.stdin?.end(request.input);
  child.on("error", (e: NodeJS.ErrnoException) => {
    error ??= { ...(e.code ? { code: e.code } : {}), message: String(e.message) };
  });
  child.on("close", (code, signal) => {
    done({
      code,
      signal,
      stdout: Buffer.concat(out),
      stderr,
      overLimit,
      aborted,
      ...(error ? { error } : {}),
    });
  });
  return () => {
    aborted = true;
    child.kill("SIGKILL");
  };
}

// The helper: `collect` as text, a message per command, gone with its parent (or when told).
const helperSource = `"use strict";
const { spawn } = require("node:child_process");
const collect = ${collect.toString()};
const running = new Map();
process.on("message", (message) => {
  if (message.kill !== undefined) return running.get(message.kill)?.();
  running.set(message.id, collect(spawn, message.request, (output) => {
    running.delete(message.id);
    process.send({ id: message.id, output });
  }));
});
process.on("disconnect", () => {
  for (const stop of running.values()) stop();
  process.exit(0);
});
// Ready once a command ran here as it will: a helper that cannot leaves every call to its parent.
collect(spawn, { command: "git", args: ["--version"], cwd: process.cwd(), env: process.env, input: "",
  maxOutputBytes: 4096, stderrTail: 0 }, (output) => output.code === 0 ? process.send({ ready: true }) : process.exit(1));
`;

/** Where commands run: the helper once it answers, this process until then (one per process). */
export class GitRunner {
  private readonly idleMs: number;
  private readonly minHostBytes: number;

  constructor(idleMs = defaultIdleMs, minHostBytes = defaultMinHostBytes) {
    this.idleMs = idleMs;
    this.minHostBytes = minHostBytes;
  }

  private helper: ChildProcess | undefined;
  private ready = false;
  private unexpectedExits = 0;
  private next = 0;
  private readonly pending = new Map<number, (output: RunOutput) => void>();
  private idle: NodeJS.Timeout | undefined;

  private holders = 0;

  state() {
    return { helperPid: this.helper?.pid, viaHelper: this.ready };
  }

  /** Starts the helper and keeps it from leaving while any holder holds it. */
  hold(): () => void {
    this.holders++;
    clearTimeout(this.idle);
    if (process.env[helperSwitch] !== "off") this.start();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.holders--;
      if (this.ready && this.pending.size === 0) this.armIdle();
    };
  }

  run(request: RunRequest): Promise<RunOutput> {
    if (process.env[helperSwitch] === "off") return runHere(request);
    if (!this.ready) {
      this.start();
      return runHere(request);
    }
    const helper = this.helper!;
    const id = ++this.next;
    clearTimeout(this.idle);
    if (this.pending.size === 0) this.keepAlive(helper, true);
    const { abortSignal, ...sent } = request;
    return new Promise<RunOutput>((resolve) => {
      const onAbort = () => {
        aborted = true;
        if (helper.connected) helper.send({ kill: id });
      };
      let aborted = false;
      abortSignal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, (output) => {
        abortSignal?.removeEventListener("abort", onAbort);
        // Advanced serialization gives a Uint8Array: the same bytes, as a Buffer.
        const stdout = Buffer.from(
          output.stdout.buffer,
          output.stdout.byteOffset,
          output.stdout.length,
        );
        resolve({ ...output, stdout, aborted: output.aborted || aborted });
      });
      helper.send({ id, request: sent });
    });
  }

  private start() {
    if (this.helper || this.unexpectedExits >= maxUnexpectedExits || !plainNode()) return;
    // A small host forks about as fast as the helper answers: not worth a process (asked again
    // at the next call, as the host grows).
    if (process.memoryUsage.rss() < this.minHostBytes) return;
    const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_RUN_AS_NODE: "1" };
    // The host's own flags (an inspector port, a loader) are not the helper's.
    delete env.NODE_OPTIONS;
    let helper: ChildProcess;
    try {
      helper = spawn(process.execPath, ["-e", helperSource], {
        // Not the host's directory, which a test or a tool may remove while the helper runs.
        cwd: dirname(process.execPath),
        env,
        stdio: ["ignore", "ignore", "ignore", "ipc"],
        serialization: "advanced",
        windowsHide: true,
      });
    } catch {
      this.unexpectedExits = maxUnexpectedExits;
      return;
    }
    this.helper = helper;
    // One that never says it is ready is not what it should be: stopped, and not tried again.
    const late = setTimeout(() => {
      this.unexpectedExits = maxUnexpectedExits;
      helper.kill("SIGKILL");
    }, startBoundMs);
    late.unref();
    helper.on("error", () => {});
    helper.on("message", (message: { ready?: true; id?: number; output?: RunOutput }) => {
      if (message.ready) {
        clearTimeout(late);
        this.ready = true;
        this.armIdle();
        return;
      }
      const settle = this.pending.get(message.id!);
      if (!settle) return;
      this.pending.delete(message.id!);
      settle(message.output!);
      if (this.pending.size === 0) {
        this.keepAlive(helper, false);
        this.armIdle();
      }
    });
    helper.on("exit", () => {
      clearTimeout(late);
      if (this.helper !== helper) return;
      const told = this.leaving;
      this.helper = undefined;
      this.ready = false;
      this.leaving = false;
      clearTimeout(this.idle);
      if (!told) this.unexpectedExits++;
      // Stopped under running commands: whether they ran is unknown, so each is an error.
      for (const settle of this.pending.values()) {
        settle({
          code: null,
          signal: null,
          stdout: Buffer.alloc(0),
          stderr: "",
          overLimit: false,
          aborted: false,
          error: { message: "the helper process running git stopped" },
        });
      }
      this.pending.clear();
    });
    this.keepAlive(helper, false);
  }

  private leaving = false;

  private armIdle() {
    clearTimeout(this.idle);
    if (this.holders > 0) return;
    this.idle = setTimeout(() => {
      if (this.pending.size > 0 || this.holders > 0 || !this.helper) return;
      this.leaving = true;
      this.ready = false;
      this.helper.disconnect();
    }, this.idleMs);
    this.idle.unref();
  }

  /** Keeps this process alive for the helper only while a command is on its way. */
  private keepAlive(helper: ChildProcess, held: boolean) {
    const channel = helper.channel as { ref?: () => void; unref?: () => void } | undefined;
    if (held) {
      helper.ref();
      channel?.ref?.();
    } else {
      helper.unref();
      channel?.unref?.();
    }
  }
}

/** Runs a command as a child of this process. */
export function runHere(request: RunRequest): Promise<RunOutput> {
  const { abortSignal, ...rest } = request;
  return new Promise((resolve) => {
    const onAbort = () => stop();
    const stop = collect(spawn, rest, (output) => {
      abortSignal?.removeEventListener("abort", onAbort);
      resolve(output);
    });
    abortSignal?.addEventListener("abort", onAbort, { once: true });
  });
}

const runner = new GitRunner();
