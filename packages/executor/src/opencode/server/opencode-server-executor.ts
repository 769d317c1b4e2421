import { tmpdir } from "node:os";
import { resolve } from "node:path";
import {
  type AttemptProcess,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  InvalidConfigError,
  refuseUnknownKeys,
  type Sandbox,
} from "@taskledger/core";
import { AttemptWatchdog, reclaimProcesses } from "@taskledger/process";
import type { ProcessEnd } from "../../agent/attempt-outcome.js";
import { attemptResult } from "../../agent/attempt-result.js";
import { attemptSettings, checkExecutorOptions, checkModel } from "../../agent/attempt-settings.js";
import {
  createAttemptRoot,
  removeDir,
  sweepStaleAttemptDirs,
} from "../../agent/attempt-temp-dir.js";
import { toolOutputs } from "../../agent/cli-agent-executor.js";
import { Transcript } from "../../agent/transcript.js";
import { createAttemptDirs } from "../attempt-dirs.js";
import { hermeticEnvironment } from "../hermetic-environment.js";
import {
  checkModels,
  explainUnknownModel,
  type ModelCheck,
  modelCheckFor,
} from "../model-check.js";
import { resolveOpencodeBinary } from "../opencode-binary.js";
import { type OpencodeExecutorOptions, opencodeOptionKeys } from "../opencode-executor.js";
import { opencodeVersion } from "../opencode-version.js";
import { OpencodeServer, type ServerStartFailure } from "./opencode-server.js";
import { type ServerPin, ServerPool } from "./server-pool.js";
import { runServerSession } from "./server-session.js";

export interface OpencodeServerExecutorOptions extends OpencodeExecutorOptions {
  /** Most `opencode serve` processes kept running; each serves one attempt at a time. Default 4. */
  poolSize?: number;
  /** How long a server may take to start listening; default 60 s. */
  serverStartTimeoutMs?: number;
  /** A server that sends nothing (not even its 10 s heartbeat) this long is killed; default 60 s. */
  serverHangMs?: number;
  /** A server is replaced after this many attempts; default 100. */
  maxAttemptsPerServer?: number;
  /** A server idle this long is stopped (the next attempt starts one); default 10 minutes. */
  serverIdleMs?: number;
  /**
   * Agent models attempts may be given besides `model` (alternates, candidates): each server gets
   * their providers' keys. `preflight` sets them too.
   */
  agentModels?: readonly string[];
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const opencodeServerOptionKeys: Record<keyof OpencodeServerExecutorOptions, true> = {
  ...opencodeOptionKeys,
  poolSize: true,
  serverStartTimeoutMs: true,
  serverHangMs: true,
  maxAttemptsPerServer: true,
  serverIdleMs: true,
  agentModels: true,
};

/** How long a server may sit idle before it is stopped, unless `serverIdleMs` says. */
export const defaultServerIdleMs = 10 * 60_000;

/**
 * Runs each attempt as a fresh session in a pool of running `opencode serve` processes, so an
 * attempt does not pay opencode's start-up. Same results, events and outcomes as
 * `OpencodeExecutor`; call `close()` (or `await using`) when done to stop the servers.
 */
export class OpencodeServerExecutor implements Executor, AsyncDisposable {
  private binary: string | undefined;
  private swept: Promise<void> | undefined;
  private readonly watchdog: AttemptWatchdog;
  private readonly pool: ServerPool;
  private readonly models: ModelCheck;
  /** The agent models the run said it may use (`preflight`): a server gets their providers' keys. */
  private runModels: readonly string[];

  constructor(private readonly options: OpencodeServerExecutorOptions) {
    refuseUnknownKeys(options, opencodeServerOptionKeys, "createOpencodeServerExecutor");
    checkExecutorOptions({ ...options }, [
      "poolSize",
      "serverStartTimeoutMs",
      "serverHangMs",
      "maxAttemptsPerServer",
      "serverIdleMs",
    ]);
    if (options.agentModels !== undefined && !Array.isArray(options.agentModels)) {
      throw new InvalidConfigError("agentModels must be a list of provider/model names");
    }
    for (const model of options.agentModels ?? []) checkModel("agentModels", model);
    this.runModels = [...(options.agentModels ?? [])];
    const settings = attemptSettings(options);
    this.watchdog = new AttemptWatchdog(settings.killGraceMs);
    this.models = modelCheckFor(
      options,
      this.watchdog,
      () => {
        this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
        return this.binary;
      },
      () => [options.model, ...this.runModels],
    );
    this.pool = new ServerPool(
      Math.floor(options.poolSize ?? 4),
      (signal, pin) => this.startServer(signal, pin),
      (server) => this.stopServer(server),
      options.maxAttemptsPerServer ?? 100,
      options.serverIdleMs ?? defaultServerIdleMs,
    );
  }

  /** Servers running now. */
  get runningServers(): number {
    return this.pool.running;
  }

  /** Servers started since the executor was made. */
  get startedServers(): number {
    return this.pool.started;
  }

  /** How many servers may run at once (`poolSize`), changed while it runs. */
  resize(poolSize: number): void {
    this.pool.resize(poolSize);
  }

  /** True when `process` is one of this executor's running servers. */
  owns(process: { pid: number; startTime: string }): boolean {
    return this.pool.owns(process);
  }

  /** The opencode binary is there and knows every agent model the run may use; before a plan is paid for. */
  async preflight(input: {
    agentModels: readonly string[];
    abortSignal: AbortSignal;
  }): Promise<void> {
    this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
    this.runModels = [...input.agentModels];
    await checkModels(this.models, [this.options.model, ...input.agentModels], input.abortSignal);
  }

  /** Starts servers while the run plans, so its first attempts do not wait for one. */
  warm(input: { count: number; abortSignal: AbortSignal; sandbox?: Sandbox }): void {
    try {
      this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
    } catch {
      // The first attempt reports the missing binary.
      return;
    }
    // A confined server is started for the one directory it serves, known only at its attempt.
    if (input.sandbox === undefined) this.pool.warm(input.count, input.abortSignal);
    else {
      void input.sandbox.status().then(
        (status) => {
          if (!status.confined) this.pool.warm(input.count, input.abortSignal);
        },
        () => {},
      );
    }
  }

  guard(process: AttemptProcess): () => void {
    this.watchdog.watch(process.pid, process);
    return () => this.watchdog.release(process.pid);
  }

  /**
   * Kills what a dead manager process left running: its servers and their tools' processes. This
   * executor's own running servers are spared (a run resumed in the same process as another).
   */
  async reclaim(processes: readonly AttemptProcess[]): Promise<void> {
    const theirs = processes.filter((process) => !this.pool.owns(process));
    await reclaimProcesses(theirs, attemptSettings(this.options).killGraceMs);
  }

  /** Stops every server; the executor runs no attempt after this. */
  close(): Promise<void> {
    return this.pool.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async run(prompt: string, given: ExecuteOptions): Promise<AttemptResult> {
    const options = { ...given, cwd: resolve(given.cwd) };
    const model = given.agentModel ?? this.options.model;
    checkModel("agentModel", model);
    const started = performance.now();
    const settings = attemptSettings(this.options);
    const transcript = new Transcript(options.cwd, settings.transcriptLimits);
    const result = (
      end: ProcessEnd,
      extra: { pid?: number; stderr?: string; serverUrl?: string; attemptDir?: string },
    ) =>
      attemptResult(transcript, end, started, {
        ...extra,
        executor: "opencode-server",
        model,
        readOnly: options.readOnly === true,
      });
    const cancelled: ProcessEnd = { exitCode: null, signal: null, stoppedBy: "abort" };
    if (options.abortSignal.aborted) return result(cancelled, {});
    this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
    let server: OpencodeServer | ServerStartFailure;
    try {
      const confined = (await options.sandbox?.status())?.confined === true;
      server = await this.pool.acquire(
        options.abortSignal,
        options.cwd,
        confined ? options.sandbox : undefined,
        options.candidate !== undefined,
      );
    } catch (error) {
      if (options.abortSignal.aborted) return result(cancelled, {});
      throw error;
    }
    if (!(server instanceof OpencodeServer)) {
      if (options.abortSignal.aborted) return result(cancelled, {});
      return result(server, { stderr: server.stderr });
    }
    server.attempts++;
    // The server's sandbox lives across its attempts: this attempt's refusals are the new ones.
    const refusedBefore = server.confinement?.refusals().length ?? 0;
    let end: ProcessEnd | undefined;
    try {
      const record = (process: AttemptProcess) => {
        try {
          options.onProcess?.(process);
        } catch {
          // A host listener's fault must not end the attempt.
        }
      };
      // A manager that dies mid-attempt has the server recorded, so a resume stops it.
      record({ pid: server.pid, startTime: server.startTime, marker: server.marker });
      end = await runServerSession({
        server,
        prompt,
        options,
        transcript,
        settings,
        model,
        pricing: this.options.pricing,
        title:
          this.options.title?.(options.subTask, options.attempt) ??
          `taskledger ${options.subTask.id} attempt ${options.attempt}`,
        hangMs: this.options.serverHangMs ?? 60_000,
        record,
      });
      await server.cleanTemp();
      const ended = result(end, {
        pid: server.pid,
        serverUrl: server.url,
        ...(end.serverLost === undefined ? {} : { stderr: server.stderrText() }),
        ...(this.options.keepAttemptDirs ? { attemptDir: server.dirs.root } : {}),
      });
      const refusals =
        server.confinement?.refusals(toolOutputs(ended), options.cwd).slice(refusedBefore) ?? [];
      if (refusals.length > 0) ended.refusals = refusals;
      return await explainUnknownModel(ended, this.models, model, options.abortSignal);
    } finally {
      this.pool.release(server, end !== undefined && end.serverLost === undefined);
    }
  }

  private async startServer(
    signal: AbortSignal,
    pin?: ServerPin,
  ): Promise<OpencodeServer | ServerStartFailure> {
    const settings = attemptSettings(this.options);
    const parent = this.options.workRoot ?? tmpdir();
    this.swept ??= sweepStaleAttemptDirs(parent);
    await this.swept;
    const root = await createAttemptRoot(parent, this.options.keepAttemptDirs ?? false);
    const dirs = await createAttemptDirs(root, opencodeVersion);
    const env = hermeticEnvironment(this.options, settings, this.options.model, dirs, [
      this.options.model,
      ...this.runModels,
    ]);
    const input = {
      binary: this.binary ?? resolveOpencodeBinary(this.options.binaryPath),
      env,
      dirs,
      plugins: this.options.plugins ?? false,
      startTimeoutMs: this.options.serverStartTimeoutMs ?? 60_000,
      maxStderrChars: settings.maxStderrChars,
      watchdog: this.watchdog,
      ...(pin ? { confine: pin } : {}),
      keepDirs: this.options.keepAttemptDirs ?? false,
    };
    let started = await OpencodeServer.start(input, signal);
    // The free port was taken before opencode bound it (opencode says only "ServeError"): try another.
    for (let retry = 0; retry < 2 && portTaken(started) && !signal.aborted; retry++) {
      started = await OpencodeServer.start(input, signal);
    }
    if (!(started instanceof OpencodeServer)) await removeDir(root);
    return started;
  }

  private async stopServer(server: OpencodeServer): Promise<void> {
    await server.stop(attemptSettings(this.options).killGraceMs);
    if (!this.options.keepAttemptDirs) await removeDir(server.dirs.root);
  }
}

function portTaken(started: OpencodeServer | ServerStartFailure): boolean {
  return (
    !(started instanceof OpencodeServer) &&
    started.exitCode === 1 &&
    /ServeError/.test(started.stderr)
  );
}

/** An executor that runs every attempt as a fresh session in a pool of `opencode serve` processes. */
export function createOpencodeServerExecutor(
  options: OpencodeServerExecutorOptions,
): OpencodeServerExecutor {
  return new OpencodeServerExecutor(options);
}
