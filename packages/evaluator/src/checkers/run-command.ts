import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbortedError,
  type AttemptProcess,
  definedOnly,
  HeadTailBuffer,
  type Sandbox,
  type SandboxedLaunch,
} from "@taskledger/core";
import { throwIfAborted } from "../abort.js";
import { programPath } from "./program-path.js";

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
  /**
   * The OS sandbox the command runs inside, as the attempts do: it writes in `cwd` and a private
   * temp directory (its TMPDIR), nowhere else.
   */
  sandbox?: Sandbox;
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
/** The guarded command's gate: `sh -c gate program args…` runs it once a line arrives. */
export const gate = 'IFS= read -r _ || exit 125; exec "$0" "$@"';

/**
 * Runs `argv` without a shell in its own process group. A timeout kills the group; so does an
 * abort, which then rejects with `AbortedError`. Whatever the command leaves running in its group
 * after it exits is killed too, so a check never leaves a process behind.
 */
export async function runCommand(
  argv: readonly string[],
  options: RunCommandOptions,
): Promise<CommandRun> {
  const sandbox = options.sandbox;
  if (!sandbox || !(await sandbox.status()).confined) return runConfined(argv, options);
  const tmp = await mkdtemp(join(tmpdir(), "taskledger-check-"));
  const env = { ...(options.env ?? process.env), TMPDIR: tmp, TMP: tmp, TEMP: tmp };
  try {
    return await runConfined(argv, { ...options, env }, (launch) =>
      sandbox.wrap({ ...launch, cwd: options.cwd, env: definedOnly(env), write: [tmp] }),
    );
  } finally {
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
  }
}

/** Runs the command, through `confine` when given (which may change program, arguments and env). */
async function runConfined(
  argv: readonly string[],
  options: RunCommandOptions,
  confine?: (launch: { file: string; args: readonly string[] }) => Promise<SandboxedLaunch>,
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

  const env = options.env ?? process.env;
  // A guarded command waits behind a gate until it is guarded: a host killed between the spawn
  // and the guard (measured under load) would otherwise leave it running with nobody to end it.
  const gated = options.guardProcess !== undefined && process.platform !== "win32";
  let launch: { file: string; args: readonly string[] } = { file: program, args };
  if (gated) {
    const found = programPath(program, options.cwd, env.PATH);
    if ("error" in found) {
      return Promise.resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        spawnError: found.error,
        stdout: "",
        stderr: "",
        durationMs: performance.now() - started,
      });
    }
    // End of input before the go line means the host died: the command never starts.
    launch = { file: "/bin/sh", args: ["-c", gate, found.path, ...args] };
  }

  const confined = confine ? await confine(launch) : undefined;
  return new Promise<CommandRun>((resolve, reject) => {
    const child = spawn(confined?.file ?? launch.file, confined?.args ?? launch.args, {
      cwd: options.cwd,
      env: confined?.env ?? env,
      stdio: [gated ? "pipe" : "ignore", "pipe", "pipe"] as const,
      detached: true,
      shell: false,
      windowsHide: true,
    });
    const release =
      child.pid === undefined
        ? undefined
        : options.guardProcess?.({ pid: child.pid, startTime: "" });
    // Guarded: let it go. Its input is then at its end, as `ignore` would leave it.
    child.stdin?.on("error", () => {});
    child.stdin?.end("go\n");
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
      const durationMs = performance.now() - started;
      // Over once the confined launch's processes are (bubblewrap's pid 1 and the relays end a
      // moment after the command): a host counting its children after the check finds none.
      void Promise.resolve(confined?.release())
        .catch(() => {})
        .then(() => {
          if (aborted) {
            reject(new AbortedError("The command check was aborted"));
            return;
          }
          resolve({
            ...run,
            timedOut,
            stdout: stdout.toString(),
            stderr: stderr.toString(),
            durationMs,
          });
        });
    };

    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.once("error", (error: NodeJS.ErrnoException) => {
      finish({ exitCode: null, signal: null, spawnError: error.code ?? error.message });
    });
    // Leftovers in the group would hold the pipes open and keep "close" from firing.
    child.once("exit", () => killGroup("SIGKILL"));
    child.once("close", (code, signal) => finish({ exitCode: code, signal }));
  });
}
