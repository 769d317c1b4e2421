import { type AttemptResult, refuseUnknownKeys, type SubTask } from "@taskledger/core";
import { agentEnvironmentOptionKeys } from "../agent/agent-environment.js";
import type { AttemptSettings } from "../agent/attempt-settings.js";
import {
  type AgentLaunch,
  CliAgentExecutor,
  type CliAgentOptions,
  cliAgentOptionKeys,
  type LaunchOptions,
} from "../agent/cli-agent-executor.js";
import { parseOpencodeEvents } from "../events/agent-events.js";
import { createAttemptDirs } from "./attempt-dirs.js";
import { hermeticEnvironment } from "./hermetic-environment.js";
import { checkModels, explainUnknownModel, type ModelCheck, modelCheckFor } from "./model-check.js";
import { resolveOpencodeBinary } from "./opencode-binary.js";
import { type OpencodeConfig, readOnlyAgent } from "./opencode-config.js";
import { opencodeVersion } from "./opencode-version.js";

export { opencodeVersion } from "./opencode-version.js";

export interface OpencodeExecutorOptions extends CliAgentOptions {
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
  /** Extra environment for opencode (API keys, `OPENCODE_AUTH_CONTENT`, …); unset entries are left out. */
  env?: Record<string, string | undefined>;
  /**
   * Host variables opencode gets besides its list (PATH, locale, terminal, TZ, proxies, the key
   * variables of its models' providers): `["DATABASE_URL"]`, …
   */
  passEnv?: readonly string[];
  /**
   * @deprecated Pass the host's whole environment (minus `OPENCODE_*` and `XDG_*`), as before the
   * allowlist; name what opencode needs in `passEnv` instead. Default false.
   */
  inheritEnv?: boolean;
  /** The host environment opencode's variables are taken from; default `process.env`. */
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** The agent's endpoint: the `baseURL` of the provider of `model` in opencode's config. */
  baseUrl?: string;
  /** Let the user's global opencode config, plugins and skills in; default false. */
  inheritGlobalConfig?: boolean;
  /** Load `opencode.json` and `.opencode/` of the working directory; default true. */
  projectConfig?: boolean;
  /** Allow opencode's external plugins (`--pure` otherwise); default false. */
  plugins?: boolean;
  /** Session title; giving one saves opencode's title-generation model call. */
  title?: (subTask: SubTask, attempt: number) => string;
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const opencodeOptionKeys: Record<keyof OpencodeExecutorOptions, true> = {
  ...cliAgentOptionKeys,
  ...agentEnvironmentOptionKeys,
  config: true,
  permission: true,
  inheritGlobalConfig: true,
  projectConfig: true,
  plugins: true,
  title: true,
  baseUrl: true,
};

/** Runs each attempt of a sub-task as a fresh `opencode run --format json` session. */
export class OpencodeExecutor extends CliAgentExecutor<OpencodeExecutorOptions> {
  protected readonly agentName = "opencode";
  private readonly models: ModelCheck;
  /** The agent models the run said it may use (`preflight`): their providers' keys are passed. */
  private runModels: readonly string[] = [];

  constructor(options: OpencodeExecutorOptions) {
    super(options);
    refuseUnknownKeys(options, opencodeOptionKeys, "createOpencodeExecutor");
    this.models = modelCheckFor(
      options,
      this.watchdog,
      () => this.agentBinary(),
      () => [options.model, ...this.runModels],
    );
  }

  /** The opencode binary is there and knows every agent model the run may use; before a plan is paid for. */
  override async preflight(input: {
    agentModels: readonly string[];
    abortSignal: AbortSignal;
  }): Promise<void> {
    await super.preflight(input);
    this.runModels = [...input.agentModels];
    await checkModels(this.models, [this.options.model, ...input.agentModels], input.abortSignal);
  }

  protected override explain(
    result: AttemptResult,
    model: string,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    return explainUnknownModel(result, this.models, model, signal);
  }

  protected resolveBinary(binaryPath: string | undefined): string {
    return resolveOpencodeBinary(binaryPath);
  }

  protected async launch(
    root: string,
    model: string,
    prompt: string,
    options: LaunchOptions,
    settings: AttemptSettings,
  ): Promise<AgentLaunch> {
    const dirs = await createAttemptDirs(root, opencodeVersion);
    const env = hermeticEnvironment(this.options, settings, model, dirs);
    // opencode takes its directory from PWD when set, so an inherited PWD would send it elsewhere.
    env.PWD = options.cwd;
    const title =
      this.options.title?.(options.subTask, options.attempt) ??
      `taskledger ${options.subTask.id} attempt ${options.attempt}`;
    const agent = options.readOnly ? readOnlyAgent : settings.agent;
    const args = ["run", "--format", "json", "--model", model, "--agent", agent];
    args.push("--title", title);
    if (!this.options.plugins) args.push("--pure");
    return { args, env, stdin: prompt, parse: parseOpencodeEvents };
  }
}

/** An executor that runs every attempt as a fresh opencode session. */
export function createOpencodeExecutor(options: OpencodeExecutorOptions): OpencodeExecutor {
  return new OpencodeExecutor(options);
}
