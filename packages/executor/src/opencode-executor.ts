import type { ChildProcess } from "node:child_process";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  type AttemptProcess,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  HeadTailBuffer,
  type Pricing,
  type SubTask,
} from "@taskledger/core";
import type { ProcessEnd } from "./attempt-outcome.js";
import { attemptResult } from "./attempt-result.js";
import {
  type AttemptLimitOptions,
  type AttemptSettings,
  attemptSettings,
  checkExecutorOptions,
  checkModel,
} from "./attempt-settings.js";
import { createAttemptRoot, removeDir, sweepStaleAttemptDirs } from "./attempt-temp-dir.js";
import { AttemptWatchdog } from "./attempt-watchdog.js";
import { createAttemptDirs, hermeticEnvironment, type OpencodeConfig } from "./hermetic-config.js";
import { checkModels, explainUnknownModel, type ModelCheck, modelCheckFor } from "./model-check.js";
import { resolveOpencodeBinary } from "./opencode-binary.js";
import { type OpencodeEvent, parseOpencodeEvents } from "./opencode-events.js";
import { opencodeVersion } from "./opencode-version.js";
import { priceStep } from "./price-step.js";
import { spawnGroup } from "./process-group.js";
import { ProcessGuard } from "./process-guard.js";
import {
  attemptMarker,
  reclaimProcesses,
  startTimeOf,
  type TrackedProcess,
} from "./process-tree.js";
import { Transcript } from "./transcript.js";

export { opencodeVersion } from "./opencode-version.js";

export interface OpencodeExecutorOptions extends AttemptLimitOptions {
  /** `provider/model`, as opencode's `--model` takes it. */
  model: string;
  /** An opencode executable; default: the one the `opencode-ai` dependency installed. */
  binaryPath?: string;
  /** opencode config merged into each attempt's (providers, agents, MCP servers, …). */
  config?: OpencodeConfig;
  /** Replaces keys of the default permissions (see `defaultPermission`). */
  permission?: Record<string, unknown>;
  /** The opencode agent to run; default `build`. */
  agent?: string;
  /** Wall-clock limit of one attempt; default 20 minutes. */
  timeoutMs?: number;
  /** Model steps one attempt may take; default 50. */
  maxSteps?: number;
  /** Consecutive `unknown` finishes after which the attempt is ended; default 3. */
  maxUnknownFinishes?: number;
  /** Time between SIGTERM and SIGKILL of the process group; default 2 s. */
  killGraceMs?: number;
  /** Extra environment for opencode (API keys, `OPENCODE_AUTH_CONTENT`, …); `process.env` works, unset entries are left out. */
  env?: Record<string, string | undefined>;
  /** Pass the host's own environment through (minus `OPENCODE_*` and `XDG_*`); default true. */
  inheritEnv?: boolean;
  /** Let the user's global opencode config, plugins and skills in; default false. */
  inheritGlobalConfig?: boolean;
  /** Load `opencode.json` and `.opencode/` of the working directory; default true. */
  projectConfig?: boolean;
  /** Allow opencode's external plugins (`--pure` otherwise); default false. */
  plugins?: boolean;
  /** Where attempt directories (`taskledger-opencode-<pid>-*`) are made; default the OS temp dir. */
  workRoot?: string;
  /** Keep each attempt's config and data directories for diagnosis; default false. */
  keepAttemptDirs?: boolean;
  /** Session title; giving one saves opencode's title-generation model call. */
  title?: (subTask: SubTask, attempt: number) => string;
  /**
   * Prices each agent step (`@taskledger/llm`'s `createPricing`). Without it, or for a model it
   * does not know, the cost opencode reports is used when above 0; otherwise it is unknown.
   */
  pricing?: Pricing;
}

/** Runs each attempt of a sub-task as a fresh `opencode run --format json` session. */
export class OpencodeExecutor implements Executor {
  private binary: string | undefined;
  /** The sweep of leftovers from dead processes, done once, before the first attempt. */
  private swept: Promise<void> | undefined;
  /** Kills this executor's attempts if the host process dies while they run. */
  private readonly watchdog: AttemptWatchdog;
  private readonly models: ModelCheck;

  constructor(private readonly options: OpencodeExecutorOptions) {
    checkExecutorOptions({ ...options }, []);
    this.watchdog = new AttemptWatchdog(this.settings().killGraceMs);
    this.models = modelCheckFor(options, this.watchdog, () => {
      this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
      return this.binary;
    });
  }

  /** The opencode binary is there and knows every agent model the run may use; before a plan is paid for. */
  async preflight(input: {
    agentModels: readonly string[];
    abortSignal: AbortSignal;
  }): Promise<void> {
    this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
    await checkModels(this.models, [this.options.model, ...input.agentModels], input.abortSignal);
  }

  /** Puts a process group the run starts beside its attempts (a check) under the watchdog too. */
  guard(process: AttemptProcess): () => void {
    this.watchdog.watch(process.pid, process);
    return () => this.watchdog.release(process.pid);
  }

  /**
   * Kills what an earlier manager process left running when it died mid-attempt: each recorded
   * process that still runs with the same start time, and its process group.
   */
  async reclaim(processes: readonly AttemptProcess[]): Promise<void> {
    await reclaimProcesses(processes, this.settings().killGraceMs);
  }

  async run(prompt: string, given: ExecuteOptions): Promise<AttemptResult> {
    const options = { ...given, cwd: resolve(given.cwd) };
    // An escalation step may ask for another agent model for this one attempt.
    const model = given.agentModel ?? this.options.model;
    checkModel("agentModel", model);
    const started = performance.now();
    const settings = this.settings();
    const transcript = new Transcript(options.cwd, settings.transcriptLimits);
    if (options.abortSignal.aborted) {
      return this.result(
        transcript,
        { exitCode: null, signal: null, stoppedBy: "abort" },
        started,
        {},
      );
    }
    this.binary ??= resolveOpencodeBinary(this.options.binaryPath);
    const parent = this.options.workRoot ?? tmpdir();
    this.swept ??= sweepStaleAttemptDirs(parent);
    await this.swept;
    const keep = this.options.keepAttemptDirs ?? false;
    const root = await createAttemptRoot(parent, keep);
    try {
      const dirs = await createAttemptDirs(root, opencodeVersion);
      const env = hermeticEnvironment(this.options, settings, model, dirs);
      // opencode takes its directory from PWD when set, so an inherited PWD would send it elsewhere.
      env.PWD = options.cwd;
      const title =
        this.options.title?.(options.subTask, options.attempt) ??
        `taskledger ${options.subTask.id} attempt ${options.attempt}`;
      const args = [
        "run",
        "--format",
        "json",
        "--model",
        model,
        "--agent",
        settings.agent,
        "--title",
        title,
      ];
      if (!this.options.plugins) args.push("--pure");
      const { end, stderr, pid } = await this.spawnAndWatch(
        args,
        env,
        prompt,
        options,
        transcript,
        settings,
      );
      const result = this.result(transcript, end, started, {
        model,
        pid,
        stderr,
        attemptDir: keep ? root : undefined,
      });
      return await explainUnknownModel(result, this.models, model, options.abortSignal);
    } finally {
      // A kept directory keeps its config and data; what opencode left in its temp directory goes.
      await removeDir(keep ? join(root, "tmp") : root);
    }
  }

  private async spawnAndWatch(
    args: string[],
    env: Record<string, string>,
    prompt: string,
    options: ExecuteOptions,
    transcript: Transcript,
    settings: AttemptSettings,
  ): Promise<{ end: ProcessEnd; stderr: string; pid: number | undefined }> {
    const binary = this.binary as string;
    // From here to the first `watch`, one synchronous stretch: no await lets the host die unguarded.
    this.watchdog.prepare();
    let pid: number | undefined;
    try {
      const child = spawnGroup(binary, args, { cwd: options.cwd, env, stdin: prompt });
      pid = child.pid;
      return await this.supervise(child, env, options, transcript, settings);
    } finally {
      this.watchdog.release(pid);
    }
  }

  private async supervise(
    child: ChildProcess,
    env: Record<string, string>,
    options: ExecuteOptions,
    transcript: Transcript,
    settings: AttemptSettings,
  ): Promise<{ end: ProcessEnd; stderr: string; pid: number | undefined }> {
    const binary = this.binary as string;
    const pid = child.pid;
    const stderr = new HeadTailBuffer(0, settings.maxStderrChars);
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    const end: ProcessEnd = { exitCode: null, signal: null };
    // Every process of the attempt inherits its own TMPDIR: what finds one no scan has seen yet.
    const marker = attemptMarker(env);
    const record = (process: TrackedProcess) => {
      if (pid !== undefined) this.watchdog.watch(pid, process, marker);
      try {
        options.onProcess?.(process.pid === pid ? { ...process, marker } : process);
      } catch {
        // A host listener's fault must not end the attempt.
      }
    };
    const leaderStart = pid === undefined ? undefined : startTimeOf(pid);
    if (pid !== undefined && leaderStart !== undefined) record({ pid, startTime: leaderStart });
    // A leader already gone still leaves its group to guard.
    else if (pid !== undefined) this.watchdog.watch(pid, { pid, startTime: "" }, marker);
    const guard =
      pid === undefined
        ? undefined
        : new ProcessGuard(pid, settings.treePollMs, record, { marker });
    const stop = (reason: NonNullable<ProcessEnd["stoppedBy"]>) => {
      end.stoppedBy ??= reason;
      guard?.terminate(settings.killGraceMs);
    };
    const onAbort = () => stop("abort");
    options.abortSignal.addEventListener("abort", onAbort, { once: true });
    // An abort while the attempt was being set up fired before this listener existed.
    if (options.abortSignal.aborted) onAbort();
    const timeout = setTimeout(() => stop("timeout"), settings.timeoutMs);

    const exited = new Promise<void>((resolve) => {
      child.once("error", (error: NodeJS.ErrnoException) => {
        end.spawnError =
          error.code === "ENOENT"
            ? `opencode binary not found at ${binary}; install opencode-ai or pass binaryPath`
            : `could not start opencode: ${error.message}`;
        resolve();
      });
      child.once("exit", (code, signal) => {
        end.exitCode = code;
        end.signal = signal;
        // The leader is gone; anything it left behind (a tool's subprocess) goes with it.
        guard?.dispose();
        // A straggler still holding the pipe must not keep the attempt open.
        setTimeout(() => child.stdout?.destroy(), settings.killGraceMs).unref();
        resolve();
      });
    });

    const emit = (event: OpencodeEvent) => {
      try {
        options.onEvent?.(event);
      } catch {
        // A host listener's fault must not end the attempt.
      }
    };
    try {
      if (child.stdout) {
        const model = options.agentModel ?? this.options.model;
        for await (const parsed of parseOpencodeEvents(child.stdout, settings.parseLimits)) {
          const event = priceStep(parsed, model, this.options.pricing);
          transcript.add(event);
          emit(event);
          if (transcript.stepCount > settings.maxSteps) stop("step-limit");
          else if (transcript.unknownFinishStreak >= settings.maxUnknownFinishes)
            stop("unknown-finish-loop");
        }
      }
    } catch {
      // The pipe broke because the process was killed; the exit below says why.
    }
    await exited;
    clearTimeout(timeout);
    options.abortSignal.removeEventListener("abort", onAbort);
    guard?.dispose();
    return { end, stderr: stderr.toString(), pid };
  }

  private settings() {
    return attemptSettings(this.options);
  }

  private result(
    transcript: Transcript,
    end: ProcessEnd,
    started: number,
    extra: {
      pid?: number | undefined;
      stderr?: string;
      attemptDir?: string | undefined;
      model?: string;
    },
  ): AttemptResult {
    return attemptResult(transcript, end, started, {
      ...extra,
      executor: "opencode",
      model: extra.model ?? this.options.model,
    });
  }
}

/** An executor that runs every attempt as a fresh opencode session. */
export function createOpencodeExecutor(options: OpencodeExecutorOptions): OpencodeExecutor {
  return new OpencodeExecutor(options);
}
