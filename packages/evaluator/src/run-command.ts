import { spawn } from "node:child_process";
import { AbortedError, type AttemptProcess, HeadTailBuffer } from "@taskledger/core";
import { throwIfAborted } from "./abort.js";

export interface RunCommandOptions {
  cwd: string;
  /** Kill the command's whole process group after this long. */
  timeoutMs: number;
  abortSignal: AbortSignal;
  /** Bytes kept from each of stdout and stderr: half from the start, half from the end. */
  maxOutputBytes?: number;
  env?: NodeJS.ProcessEnv;
  /** Between SIGTERM and SIGKILL when the command is stopped. */
  killGraceMs?: number;
  /** Told of the command's process group as it starts, so it cannot outlive the host. */
  guardProcess?: (process: AttemptProcess) => () => void;
}

export interface CommandRun {
  /** The exit code, or `null` when a signal ended it or it never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Why it could not start (`ENOENT` for a missing program), when it could not. */
  spawnError?: string;
  stdout: string;
  stderr: string;
  durationMs: number;
}

const defaultMaxOutputBytes = 8 * 1024;

/**
 * Runs `argv` without a shell in its own process group. A timeout kills the group; so does an
 * abort, which then rejects with `AbortedError`. Whatever the command leaves running in its group
 * after it exits is killed too, so a check never leaves a process behind.
 */
export function runCommand(
  argv: readonly string[],
  options: RunCommandOptions,
): Promise<CommandRun> {
  const [program, ...args] = argv;
  if (program === undefined) return Promise.reject(new TypeError("argv is empty"));
  try {
    throwIfAborted(options.abortSignal);
  } catch (error) {
    return Promise.reject(error);
  }
  const half = Math.max(1, Math.floor((options.maxOutputBytes ?? defaultMaxOutputBytes) / 2));
  const stdout = new HeadTailBuffer(half, half);
  const stderr = new HeadTailBuffer(half, half);
  const graceMs = options.killGraceMs ?? 2000;
  const started = performance.now();

  return new Promise<CommandRun>((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      shell: false,
      windowsHide: true,
    });
    // In the tick of the spawn: no moment where the host could die with the group unguarded.
    const release =
      child.pid === undefined
        ? undefined
        : options.guardProcess?.({ pid: child.pid, startTime: "" });
    let timedOut = false;
    let aborted = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;

    const killGroup = (signal: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is already gone.
      }
    };
    const stop = () => {
      killGroup("SIGTERM");
      killTimer ??= setTimeout(() => killGroup("SIGKILL"), graceMs);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    options.abortSignal.addEventListener("abort", onAbort, { once: true });

    const finish = (run: Omit<CommandRun, "stdout" | "stderr" | "durationMs" | "timedOut">) => {
      if (settled) return;
      settled = true;
      release?.();
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      options.abortSignal.removeEventListener("abort", onAbort);
      if (aborted) {
        reject(new AbortedError("The command check was aborted"));
        return;
      }
      resolve({
        ...run,
        timedOut,
        stdout: stdout.toString(),
        stderr: stderr.toString(),
        durationMs: performance.now() - started,
      });
    };

    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.once("error", (error: NodeJS.ErrnoException) => {
      finish({ exitCode: null, signal: null, spawnError: error.code ?? error.message });
    });
    // Leftovers in the group would hold the pipes open and keep "close" from firing.
    child.once("exit", () => killGroup("SIGKILL"));
    child.once("close", (code, signal) => finish({ exitCode: code, signal }));
  });
}
