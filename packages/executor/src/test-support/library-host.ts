// A library host (attempt-host.ts, on the built executor) in a process of its own, for the tests
// of what a host's exit or death leaves behind.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  commandLineOf,
  createModelServer,
  killProcessesUnder,
  type ModelServer,
  type ModelServerOptions,
  pollUntil,
  processesUnder,
  scriptedOpencodeProvider,
} from "@taskledger/testing";

/** The built executor the host runs on (`npm run build`). */
export const builtExecutor = resolve(import.meta.dirname, "../../dist/index.js");

const host = resolve(import.meta.dirname, "attempt-host.ts");

export interface LibraryHost {
  /** Everything of the test's is under it; the host runs in it. */
  root: string;
  /** `<root>/work`: the attempt's directory. */
  cwd: string;
  /** `<root>/tmp`, the host's TMPDIR, when asked for; else the host has the test's. */
  temp: string | undefined;
  server: ModelServer;
  child: ChildProcess;
  /** What the host printed so far. */
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the host if it still runs and what runs under the root, closes the server, removes the root. */
  cleanup(): Promise<void>;
}

/**
 * Starts attempt-host.ts in `mode` in a new root (named `prefix`…) whose opencode asks a model
 * server answering `replies`; with `tmp`, the host's TMPDIR (so the attempts' directories) is
 * under the root too.
 */
export async function startLibraryHost(
  prefix: string,
  mode: string,
  replies: ModelServerOptions["replies"],
  { tmp = false } = {},
): Promise<LibraryHost> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const cwd = join(root, "work");
  const temp = tmp ? join(root, "tmp") : undefined;
  await mkdir(cwd);
  if (temp) await mkdir(temp);
  const server = await createModelServer({ replies });
  const child = spawn(process.execPath, [host, cwd, mode], {
    cwd: root,
    env: {
      ...process.env,
      ...(temp ? { TMPDIR: temp } : {}),
      TASKLEDGER_TEST_PROVIDER: JSON.stringify(scriptedOpencodeProvider(server)),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += d;
  });
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on("exit", (code, signal) => r({ code, signal })),
  );
  return {
    root,
    cwd,
    temp,
    server,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async cleanup() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await killProcessesUnder(root);
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** What still runs under `root` once all is gone or the wait gives up, each as `pid command line`. */
export async function leftUnder(root: string): Promise<string[]> {
  const left = await pollUntil(
    () => processesUnder(root),
    (pids) => pids.length === 0,
  );
  return left.map((pid) => `${pid} ${commandLineOf(pid)}`);
}
