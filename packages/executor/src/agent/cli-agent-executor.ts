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
  type SandboxedLaunch,
  stripControl,
} from "@taskledger/core";
import {
  AttemptWatchdog,
  attemptMarker,
  ProcessGuard,
  reclaimProcesses,
  spawnGroup,
  startTimeOf,
  type TrackedProcess,
} from "@taskledger/process";
import type { EventParseLimits, OpencodeEvent } from "../events/agent-events.js";
import { isProviderRefusal, type ProcessEnd } from "./attempt-outcome.js";
import { attemptResult } from "./attempt-result.js";
import {
  type AttemptLimitOptions,
  type AttemptSettings,
  attemptSettings,
  checkExecutorOptions,
  checkModel,
} from "./attempt-settings.js";
import {
  type AttemptDirAgent,
  createAttemptRoot,
  removeDir,
  sweepStaleAttemptDirs,
} from "./attempt-temp-dir.js";
import { priceStep } from "./price-step.js";
import { Transcript } from "./transcript.js";

/** What every executor that runs an agent's CLI once per attempt takes. */
export interface CliAgentOptions extends AttemptLimitOptions {
  model: string;
  /** The agent's executable; default: the one its npm package installed. */
  binaryPath?: string;
  /** Where attempt directories (`taskledger-<agent>-<pid>-*`) are made; default the OS temp dir. */
  workRoot?: string;
  /** Keep each attempt's directory for diagnosis; default false. */
  keepAttemptDirs?: boolean;
  /** Prices each step (`@taskledger/llm`'s `createPricing`); else the agent's own figure above 0. */
  pricing?: Pricing;
}

/** An attempt's options as a launch sees them: `confined` when it runs inside the OS sandbox. */
export type LaunchOptions = ExecuteOptions & { confined: boolean };

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const cliAgentOptionKeys: Record<keyof CliAgentOptions, true> = {
  model: true,
  binaryPath: true,
  workRoot: true,
  keepAttemptDirs: true,
  pricing: true,
  agent: true,
  timeoutMs: true,
  maxSteps: true,
  maxUnknownFinishes: true,
  killGraceMs: true,
  limits: true,
};

/** One attempt's command line, as an agent's executor builds it in the attempt's own directory. */
export interface AgentLaunch {
  args: string[];
  env: Record<string, string>;
  /** The prompt, written to stdin and then closed. */
  stdin: string;
  /** A parser for this launch's stdout, as the transcript's typed events. */
  parse(
    stdout: AsyncIterable<Buffer | string>,
    limits: EventParseLimits,
  ): AsyncIterable<OpencodeEvent>;
  /** The agent's own figure for the attempt's cost, used when pricing leaves it unknown. */
  costUsd?(): number | undefined;
  /** Files it must read though the sandbox denies their region (the user's login, when it uses it). */
  read?: string[];
  /** The agent's refusal of its configuration, read from stderr after a failed start. */
  configRejection?(stderr: string): string | undefined;
}

/**
 * The attempt loop every CLI agent shares: a fresh process group per attempt in a private temp
 * directory, the host-death watchdog, abort/timeout/step caps killing the whole tree, a bounded
 * transcript and one result shape. An agent adds only its command line and its event parser.
 */
export abstract class CliAgentExecutor<Options extends CliAgentOptions> implements Executor {
  /** Names the agent in results and errors (`opencode`, `claude-code`, `codex`). */
  protected abstract readonly agentName: AttemptDirAgent;
  protected binary: string | undefined;
  /** The sweep of leftovers from dead processes, done once, before the first attempt. */
  private swept: Promise<void> | undefined;
  /** Kills this executor's attempts if the host process dies while they run. */
  protected readonly watchdog: AttemptWatchdog;

  constructor(
    protected readonly options: Options,
    /** Throws `InvalidConfigError` for a model the agent cannot take. */
    private readonly checkModelOf: (name: string, model: string) => void = checkModel,
  ) {
    checkExecutorOptions({ ...(options as CliAgentOptions) }, [], checkModelOf);
    this.watchdog = new AttemptWatchdog(this.settings().killGraceMs);
  }

  /** The executable to run; throws `ExecutorError` saying how to install it. */
  protected abstract resolveBinary(binaryPath: string | undefined): string;

  /** The agent's executable, found once; throws `ExecutorError` saying how to install it. */
  protected agentBinary(): string {
    this.binary ??= this.resolveBinary(this.options.binaryPath);
    return this.binary;
  }

  /** The agent's binary is there and every agent model the run may use is one it takes; before a plan is paid for. */
  async preflight(input: {
    agentModels: readonly string[];
    abortSignal: AbortSignal;
  }): Promise<void> {
    this.agentBinary();
    for (const model of input.agentModels) this.checkModelOf("agentModel", model);
  }

  /** A failed attempt's result said more plainly, when the agent can tell why (opencode: an unknown model). */
  protected async explain(
    result: AttemptResult,
    _model: string,
    _signal: AbortSignal,
  ): Promise<AttemptResult> {
    return result;
  }

  /** The command line of one attempt; `root` is the attempt's own directory (removed after). */
  protected abstract launch(
    root: string,
    model: string,
    prompt: string,
    options: LaunchOptions,
    settings: AttemptSettings,
  ): Promise<AgentLaunch>;

  /** Puts a process group the run starts beside its attempts (a check) under the watchdog too. */
  guard(process: AttemptProcess): () => void {
    this.watchdog.watch(process.pid, process);
    return () => this.watchdog.release(process.pid);
  }

  /**
   * Kills what an earlier manager process left running when it died mid-attempt: each recorded
   * process that still runs with the same start time, its process group, and every process
   * carrying a recorded marker.
   */
  async reclaim(processes: readonly AttemptProcess[]): Promise<void> {
    await reclaimProcesses(processes, this.settings().killGraceMs);
  }

  /** `provider/model` for pricing a step of `model`. */
  protected pricedModel(model: string): string {
    return model;
  }

  /** The model of one attempt: an escalation step may ask for another one. */
  protected modelFor(options: ExecuteOptions): string {
    return options.agentModel ?? this.options.model;
  }

  async run(prompt: string, given: ExecuteOptions): Promise<AttemptResult> {
    const options = { ...given, cwd: resolve(given.cwd) };
    const model = this.modelFor(given);
    this.checkModelOf("agentModel", model);
    const started = performance.now();
    const settings = this.settings();
    const transcript = new Transcript(options.cwd, settings.transcriptLimits);
    const aborted: ProcessEnd = { exitCode: null, signal: null, stoppedBy: "abort" };
    const readOnly = options.readOnly === true;
    if (options.abortSignal.aborted)
      return this.result(transcript, aborted, started, { model, readOnly });
    this.agentBinary();
    const parent = this.options.workRoot ?? tmpdir();
    this.swept ??= sweepStaleAttemptDirs(parent);
    await this.swept;
    const keep = this.options.keepAttemptDirs ?? false;
    const root = await createAttemptRoot(parent, keep, this.agentName);
    let confinement: SandboxedLaunch | undefined;
    try {
      const confined = (await options.sandbox?.status())?.confined === true;
      const launch = await this.launch(root, model, prompt, { ...options, confined }, settings);
      // Wrapped before the watchdog's synchronous stretch: the agent and all it starts, confined.
      confinement = await options.sandbox?.wrap({
        file: this.agentBinary(),
        args: launch.args,
        cwd: options.cwd,
        env: launch.env,
        write: [root],
        ...(launch.read ? { read: launch.read } : {}),
      });
      // A dead host's watchdog removes the directory, unless it is kept for diagnosis.
      const dir = keep ? undefined : root;
      const { end, stderr, pid } = await this.spawnAndWatch(
        launch,
        options,
        transcript,
        settings,
        confinement,
        dir,
      );
      if (end.exitCode !== 0 && transcript.stepCount === 0) {
        // The agent's own words reach a terminal and a log: no escape sequence of its survives.
        const rejection = launch.configRejection?.(stripControl(stderr));
        if (rejection !== undefined) end.configRejection = rejection;
      }
      const result = this.result(transcript, end, started, {
        readOnly,
        model,
        pid,
        stderr,
        attemptDir: keep ? root : undefined,
      });
      const refusals = confinement?.refusals(`${stderr}\n${toolOutputs(result)}`) ?? [];
      if (refusals.length > 0) result.refusals = refusals;
      const own = launch.costUsd?.();
      if (
        own !== undefined &&
        (result.usage.costUsd === undefined || result.usage.unpricedModels)
      ) {
        const { unpricedModels: _unknown, ...usage } = result.usage;
        result.usage = { ...usage, costUsd: own };
      }
      return await this.explain(result, model, options.abortSignal);
    } finally {
      await confinement?.release();
      // A kept directory keeps its config and data; what the agent left in its temp directory goes.
      await removeDir(keep ? join(root, "tmp") : root);
    }
  }

  private async spawnAndWatch(
    launch: AgentLaunch,
    options: ExecuteOptions,
    transcript: Transcript,
    settings: AttemptSettings,
    confinement: SandboxedLaunch | undefined,
    dir: string | undefined,
  ): Promise<{ end: ProcessEnd; stderr: string; pid: number | undefined }> {
    const binary = this.binary as string;
    // From here to the first `watch`, one synchronous stretch: no await lets the host die unguarded.
    this.watchdog.prepare();
    let pid: number | undefined;
    try {
      const child = spawnGroup(confinement?.file ?? binary, confinement?.args ?? launch.args, {
        cwd: options.cwd,
        env: confinement?.env ?? launch.env,
        stdin: launch.stdin,
      });
      pid = child.pid;
      return await this.supervise(child, launch, options, transcript, settings, dir);
    } finally {
      this.watchdog.release(pid);
    }
  }

  private async supervise(
    child: ChildProcess,
    launch: AgentLaunch,
    options: ExecuteOptions,
    transcript: Transcript,
    settings: AttemptSettings,
    dir: string | undefined,
  ): Promise<{ end: ProcessEnd; stderr: string; pid: number | undefined }> {
    const binary = this.binary as string;
    const pid = child.pid;
    const stderr = new HeadTailBuffer(0, settings.maxStderrChars);
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    const end: ProcessEnd = { exitCode: null, signal: null };
    // Every process of the attempt inherits its own TMPDIR: what finds one no scan has seen yet.
    const marker = attemptMarker(launch.env);
    const record = (process: TrackedProcess) => {
      if (pid !== undefined) this.watchdog.watch(pid, process, marker, dir);
      try {
        options.onProcess?.(process.pid === pid ? { ...process, marker } : process);
      } catch {
        // A host listener's fault must not end the attempt.
      }
    };
    const leaderStart = pid === undefined ? undefined : startTimeOf(pid);
    if (pid !== undefined && leaderStart !== undefined) record({ pid, startTime: leaderStart });
    // A leader already gone still leaves its group to guard.
    else if (pid !== undefined) this.watchdog.watch(pid, { pid, startTime: "" }, marker, dir);
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
            ? `${this.agentName} binary not found at ${binary}; install it or pass binaryPath`
            : `could not start ${this.agentName}: ${error.message}`;
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
        const model = this.pricedModel(this.modelFor(options));
        for await (const parsed of launch.parse(child.stdout, settings.parseLimits)) {
          const event = priceStep(parsed, model, this.options.pricing);
          transcript.add(event);
          emit(event);
          if (transcript.stepCount > settings.maxSteps) stop("step-limit");
          else if (transcript.unknownFinishStreak >= settings.maxUnknownFinishes)
            stop("unknown-finish-loop");
          // The agent would retry a refused key for minutes (Claude Code: 10 times, backing off).
          else if (event.type === "error" && isProviderRefusal(event)) stop("provider-refused");
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

  protected settings(): AttemptSettings {
    return attemptSettings(this.options);
  }

  private result(
    transcript: Transcript,
    end: ProcessEnd,
    started: number,
    extra: {
      model: string;
      readOnly: boolean;
      pid?: number | undefined;
      stderr?: string;
      attemptDir?: string | undefined;
    },
  ): AttemptResult {
    return attemptResult(transcript, end, started, {
      ...extra,
      executor: this.agentName,
      pricedModel: this.pricedModel(extra.model),
    });
  }
}

/** What the agent's tools printed, bounded: where a refused write shows when nothing else records it. */
export function toolOutputs(result: AttemptResult): string {
  return result.toolCalls
    .map((call) => call.output)
    .join("\n")
    .slice(-64_000);
}
