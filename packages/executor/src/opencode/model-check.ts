import { tmpdir } from "node:os";
import { type AttemptResult, HeadTailBuffer, InvalidConfigError } from "@taskledger/core";
import type { AttemptWatchdog } from "@taskledger/process";
import { attemptMarker, signalAttempt, spawnGroup, startTimeOf } from "@taskledger/process";
import type { AttemptLimitOptions } from "../agent/attempt-settings.js";
import { attemptSettings } from "../agent/attempt-settings.js";
import { createAttemptRoot, removeDir } from "../agent/attempt-temp-dir.js";
import { type AttemptDirs, createAttemptDirs } from "./attempt-dirs.js";
import { type HermeticOptions, hermeticEnvironment } from "./hermetic-environment.js";
import type { OpencodeConfig } from "./opencode-config.js";
import { opencodeVersion } from "./opencode-version.js";

/** Lists the models opencode can run (`opencode models`); `undefined` when it cannot tell. */
export type ListModels = (signal: AbortSignal) => Promise<ReadonlySet<string> | undefined>;

/**
 * Whether opencode knows an agent model, asked once per executor: a model of a provider the
 * executor's config lists with its models is known without asking; any other is looked up in
 * `opencode models` run with the attempts' own config and environment (about 2 s).
 */
export class ModelCheck {
  private listed: Promise<ReadonlySet<string> | undefined> | undefined;

  constructor(
    private readonly list: ListModels,
    private readonly config: OpencodeConfig | undefined,
  ) {}

  /** Why `model` cannot run, naming it; `undefined` when it can, or when opencode cannot tell. */
  async problem(model: string, signal: AbortSignal): Promise<string | undefined> {
    if (configured(this.config, model)) return undefined;
    this.listed ??= this.list(signal);
    const known = await this.listed;
    // An answer cut short by a cancel says nothing; the next check asks again.
    if (known === undefined && signal.aborted) this.listed = undefined;
    if (known === undefined || known.has(model)) return undefined;
    return (
      `agent model "${model}" is not one opencode knows with the executor's config and ` +
      "environment (see `opencode models`): check its spelling, the provider's API key, or add " +
      "the provider and model to the executor's `config.provider`"
    );
  }
}

function configured(config: OpencodeConfig | undefined, model: string): boolean {
  const slash = model.indexOf("/");
  const providers = config?.provider as Record<string, { models?: unknown }> | undefined;
  const models = providers?.[model.slice(0, slash)]?.models;
  return typeof models === "object" && models !== null && model.slice(slash + 1) in models;
}

/** The `provider/model` lines of `opencode models` output. */
export function parseModelList(stdout: string): Set<string> {
  return new Set(
    stdout
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => /^[^/\s]+\/\S+$/.test(line)),
  );
}

export interface ListModelsInput {
  binary: string;
  /** Where its temporary directories go (the executor's `workRoot`). */
  parent: string;
  opencodeVersion: string;
  /** The environment an attempt would get in `dirs`. */
  env: (dirs: AttemptDirs) => Record<string, string>;
  watchdog: AttemptWatchdog;
  /** Bound on the whole listing; default 30 s. */
  timeoutMs?: number;
}

/**
 * Runs `opencode models` as an attempt would run (its config, environment and the watchdog), and
 * returns the models it lists; `undefined` when it failed, timed out or was cancelled.
 */
export async function listOpencodeModels(
  input: ListModelsInput,
  signal: AbortSignal,
): Promise<ReadonlySet<string> | undefined> {
  if (signal.aborted) return undefined;
  const root = await createAttemptRoot(input.parent, false);
  let pid: number | undefined;
  try {
    const dirs = await createAttemptDirs(root, input.opencodeVersion);
    const env = { ...input.env(dirs), PWD: root };
    // From here to `watch`, one synchronous stretch: no await lets the host die unguarded.
    input.watchdog.prepare();
    const child = spawnGroup(input.binary, ["models"], { cwd: root, env, stdin: "" });
    pid = child.pid;
    const marker = attemptMarker(env);
    if (pid !== undefined)
      input.watchdog.watch(pid, { pid, startTime: startTimeOf(pid) ?? "" }, marker);
    const stdout = new HeadTailBuffer(0, 1_000_000);
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.resume();
    const kill = () => {
      if (pid !== undefined) signalAttempt(pid, [], "SIGKILL", marker);
    };
    const timer = setTimeout(kill, input.timeoutMs ?? 30_000);
    signal.addEventListener("abort", kill, { once: true });
    const code = await new Promise<number | null>((resolve) => {
      child.once("error", () => resolve(null));
      child.once("close", (exitCode) => resolve(exitCode));
    });
    clearTimeout(timer);
    signal.removeEventListener("abort", kill);
    return code === 0 ? parseModelList(stdout.toString()) : undefined;
  } finally {
    input.watchdog.release(pid);
    await removeDir(root);
  }
}

/** An executor's model check: `opencode models` run with its options, under its watchdog. */
export function modelCheckFor(
  options: HermeticOptions & AttemptLimitOptions & { model: string; workRoot?: string },
  watchdog: AttemptWatchdog,
  binary: () => string,
  /** Every model the run may use: `opencode models` lists only those whose provider's key it has. */
  models: () => readonly string[] = () => [options.model],
): ModelCheck {
  const settings = attemptSettings(options);
  return new ModelCheck(
    (signal) =>
      listOpencodeModels(
        {
          binary: binary(),
          parent: options.workRoot ?? tmpdir(),
          opencodeVersion,
          env: (dirs) => hermeticEnvironment(options, settings, options.model, dirs, models()),
          watchdog,
        },
        signal,
      ),
    options.config,
  );
}

/** Throws `InvalidConfigError` naming the first of `models` opencode does not know. */
export async function checkModels(
  check: ModelCheck,
  models: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  for (const model of new Set(models)) {
    const problem = await check.problem(model, signal);
    if (problem !== undefined) throw new InvalidConfigError(problem);
  }
}

/**
 * An attempt that failed before its first step with opencode's bare "Unexpected server error"
 * may have been given a model opencode does not know: then it is a configuration error naming the
 * model, not retryable, instead of a retry that ends the same.
 */
export async function explainUnknownModel(
  result: AttemptResult,
  check: ModelCheck,
  model: string,
  signal: AbortSignal,
): Promise<AttemptResult> {
  if (result.outcome !== "error" || result.retryable === false) return result;
  if ((result.details as { steps?: number } | undefined)?.steps !== 0) return result;
  const problem = await check.problem(model, signal);
  return problem === undefined ? result : { ...result, error: problem, retryable: false };
}
