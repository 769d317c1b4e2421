// Real `taskledger worker` processes for the CLI's queue tests.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { compatibleProviderId } from "../runtime.js";

const bin = resolve(import.meta.dirname, "../../dist/bin.js");

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  workDir: string;
  /** What it printed on stderr so far: a line per job started and finished. */
  log(): string;
  /** Resolves when its log holds `text`. */
  waitFor(text: string): Promise<void>;
  /** Ctrl-C, then waits for the exit. */
  stop(): Promise<void>;
}

/** Starts a built `taskledger worker` against `redis` whose agents talk to `baseURL`. */
export async function startWorker(
  redis: string,
  baseURL: string,
  workDir: string,
  extra: string[] = [],
): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    [
      bin,
      "worker",
      "--redis",
      redis,
      "--provider",
      "openai-compatible",
      "--base-url",
      baseURL,
      "--agent-model",
      `${compatibleProviderId}/agent`,
      "--work-dir",
      workDir,
      ...extra,
    ],
    { env: { ...process.env, CI: "true" }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  const waiters: { text: string; done: () => void }[] = [];
  child.stderr?.on("data", (chunk) => {
    log += chunk;
    for (const waiter of [...waiters]) {
      if (log.includes(waiter.text)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    }
  });
  const exited = once(child, "exit");
  const waitFor = (text: string) =>
    log.includes(text)
      ? Promise.resolve()
      : new Promise<void>((done, fail) => {
          waiters.push({ text, done });
          exited.then(() => fail(new Error(`worker exited before "${text}":\n${log}`)));
        });
  await waitFor("taking attempts from");
  return {
    child,
    pid: child.pid!,
    workDir,
    log: () => log,
    waitFor,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGINT");
      await exited;
    },
  };
}
