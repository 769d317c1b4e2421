import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbortedError,
  definedOnly,
  HeadTailBuffer,
  type Sandbox,
  type SandboxedLaunch,
  type SetupSettings,
  unconfined,
  WorkspaceError,
} from "@taskledger/core";

/** The lockfiles whose change makes a setup command run again, when the user names none. */
export const defaultSetupInputs = [
  "package-lock.json",
  "npm-shrinkwrap.json",
  "pnpm-lock.yaml",
  "yarn.lock",
  "bun.lock",
  "requirements*.txt",
  "poetry.lock",
  "uv.lock",
  "Pipfile.lock",
  "Cargo.lock",
  "go.sum",
];

export const defaultSetupTimeoutMs = 10 * 60_000;

// What the log and an error keep of the command's output: how it began and how it ended.
const outputHead = 2 * 1024;
const outputTail = 6 * 1024;

/** Set in a setup command's environment, so a resumed run finds what a killed one left running. */
export const setupMarkerVariable = "TASKLEDGER_SETUP_RUN";

export interface SetupResult {
  exitCode: number;
  durationMs: number;
  output: string;
}

/**
 * Runs a slot's setup command through the shell in `cwd`, in its own process group (killed whole
 * on abort or timeout), output bounded. A non-zero exit is a `WorkspaceError` (`setup-failed`)
 * showing the output's tail.
 */
export async function runSetupCommand(
  setup: SetupSettings,
  cwd: string,
  runId: string,
  abortSignal?: AbortSignal,
  sandbox?: Sandbox,
): Promise<SetupResult> {
  if (abortSignal?.aborted) throw new AbortedError();
  const env = { ...definedOnly(process.env), [setupMarkerVariable]: runId };
  // Confined, it writes only in the slot and a temp directory of its own, with the project's hosts.
  const tmp = sandbox ? await mkdtemp(join(tmpdir(), "taskledger-setup-")) : undefined;
  if (tmp) Object.assign(env, { TMPDIR: tmp, TMP: tmp, TEMP: tmp });
  const command = { file: "sh", args: ["-c", setup.command], cwd, env };
  const launch = await (sandbox?.wrap({ ...command, write: tmp ? [tmp] : [] }) ??
    Promise.resolve(unconfined(command)));
  try {
    return await spawnSetup(setup, cwd, launch, abortSignal);
  } finally {
    await launch.release();
    if (tmp) await rm(tmp, { recursive: true, force: true }).catch(() => {});
  }
}

function spawnSetup(
  setup: SetupSettings,
  cwd: string,
  launch: SandboxedLaunch,
  abortSignal: AbortSignal | undefined,
): Promise<SetupResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(launch.file, launch.args, {
      cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: launch.env,
    });
    const output = new HeadTailBuffer(outputHead, outputTail);
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    let stoppedBy: "abort" | "timeout" | undefined;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    const stop = (why: "abort" | "timeout") => {
      stoppedBy ??= why;
      killGroup();
    };
    const onAbort = () => stop("abort");
    abortSignal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => stop("timeout"), setup.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(
        new WorkspaceError("setup-failed", `The setup command could not start: ${error.message}`),
      );
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      abortSignal?.removeEventListener("abort", onAbort);
      // Whatever it left in its group (a background server, say) does not outlive it.
      killGroup();
      const durationMs = Math.round(performance.now() - started);
      const text = output.toString();
      if (stoppedBy === "abort") return reject(new AbortedError());
      const exitCode = code ?? 128;
      if (stoppedBy === "timeout" || exitCode !== 0) {
        const how =
          stoppedBy === "timeout"
            ? `did not finish within ${Math.round(setup.timeoutMs / 1000)} s`
            : `failed (${signal ?? `exit ${exitCode}`})`;
        return reject(
          new WorkspaceError(
            "setup-failed",
            `The setup command \`${setup.command}\` ${how} in ${cwd}.${refusedHosts(launch, text)} Its output ends:\n${tailLines(text)}`,
          ),
        );
      }
      resolve({ exitCode, durationMs, output: text });
    });
  });
}

function tailLines(text: string): string {
  const lines = text.trimEnd().split("\n");
  return lines.slice(-20).join("\n") || "(no output)";
}

/** Kills the setup commands a stopped process left running for `runId` (Linux; elsewhere none). */
export function killLeftoverSetup(runId: string): void {
  if (process.platform !== "linux") return;
  const marker = `${setupMarkerVariable}=${runId}\0`;
  for (const name of readdirSafe("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "latin1").includes(marker))
        process.kill(Number(name), "SIGKILL");
    } catch {
      // Gone, or another user's.
    }
  }
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** The hosts the sandbox refused the setup, with how to allow them: installs need their registry. */
function refusedHosts(launch: SandboxedLaunch, output: string): string {
  const hosts = launch
    .refusals(output)
    .filter((refusal) => refusal.kind === "network")
    .map((refusal) => refusal.target);
  if (hosts.length === 0) return "";
  return ` The sandbox refused ${hosts.slice(0, 5).join(", ")}: allow the hosts it needs with --allow-host or "sandbox": { "network": { "allow": [...] } } in taskledger.json.`;
}
