import { mkdir, symlink } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { refuseUnknownKeys } from "@taskledger/core";
import { resolveAgentBinary } from "../agent/agent-binary.js";
import {
  type AgentEnvironmentOptions,
  agentEnvironment,
  agentEnvironmentOptionKeys,
} from "../agent/agent-environment.js";
import { type AttemptSettings, checkModelName } from "../agent/attempt-settings.js";
import {
  type AgentLaunch,
  CliAgentExecutor,
  type CliAgentOptions,
  cliAgentOptionKeys,
  type LaunchOptions,
} from "../agent/cli-agent-executor.js";
import { translateJsonLines } from "../events/agent-json-lines.js";
import { CodexTranslator } from "./codex-events.js";

/** The Codex release this package is tested against (its `@openai/codex` dev dependency). */
export const codexVersion = "0.169.0";

/** A Codex `model_providers` entry: an OpenAI-compatible endpoint and the variable holding its key. */
export interface CodexProvider {
  /** The provider's id in Codex's config; default `taskledger`. */
  id?: string;
  baseUrl: string;
  /** The environment variable Codex reads the key from. */
  envKey: string;
  /** Default `responses`. */
  wireApi?: "responses" | "chat";
  /** Codex's own retries of a failed request and of a dropped stream; default Codex's. */
  requestMaxRetries?: number;
  streamMaxRetries?: number;
}

/** The variables Codex signs in with, passed from the host when set (`OPENAI_API_KEY` becomes `CODEX_API_KEY`). */
export const codexProviderEnv: readonly string[] = ["CODEX_API_KEY", "OPENAI_API_KEY"];

export interface CodexExecutorOptions extends CliAgentOptions, AgentEnvironmentOptions {
  /** A model name as `codex exec -m` takes it (`gpt-5-codex`, …). */
  model: string;
  /**
   * The agent's endpoint (a Responses API server), as a `model_providers` entry keyed by
   * `CODEX_API_KEY`; `provider` says more (its own id, key variable, wire API).
   */
  baseUrl?: string;
  /**
   * `api-key` (default): `OPENAI_API_KEY`/`CODEX_API_KEY` from the environment (or the provider's
   * `envKey`). `login`: the user's `codex login`: `auth.json` of `~/.codex` (or `CODEX_HOME`),
   * linked (never copied) into the attempt's private `CODEX_HOME`.
   */
  auth?: "api-key" | "login";
  /** A model provider other than OpenAI's own. */
  provider?: CodexProvider;
  /** Codex's sandbox; default `workspace-write` (writes in the attempt's directory only, no network). */
  sandbox?: "read-only" | "workspace-write" | "danger-full-access";
  /** Extra `-c key=value` overrides, values in TOML (`'"high"'`, `true`, `3`). */
  config?: Record<string, string | number | boolean>;
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const codexOptionKeys: Record<keyof CodexExecutorOptions, true> = {
  ...cliAgentOptionKeys,
  ...agentEnvironmentOptionKeys,
  auth: true,
  provider: true,
  sandbox: true,
  config: true,
  baseUrl: true,
};

/** Runs each attempt as a fresh `codex exec --json` session. */
export class CodexExecutor extends CliAgentExecutor<CodexExecutorOptions> {
  protected readonly agentName = "codex";

  constructor(options: CodexExecutorOptions) {
    super(options, checkModelName);
    refuseUnknownKeys(options, codexOptionKeys, "createCodexExecutor");
  }

  protected override pricedModel(model: string): string {
    return `${this.options.provider?.id ?? "openai"}/${model}`;
  }

  /** `provider`, or the endpoint `baseUrl` names: keyed by CODEX_API_KEY, or by the user's login. */
  private provider(): (CodexProvider & { login?: boolean }) | undefined {
    const { provider, baseUrl } = this.options;
    if (provider || baseUrl === undefined) return provider;
    const login = this.options.auth === "login";
    return { id: "taskledger", baseUrl, envKey: "CODEX_API_KEY", ...(login ? { login } : {}) };
  }

  protected resolveBinary(binaryPath: string | undefined): string {
    const target = codexTarget();
    const exe = process.platform === "win32" ? "codex.exe" : "codex";
    return resolveAgentBinary({
      binaryPath,
      packageFiles: target
        ? [target.package, "@openai/codex"].map(
            (name) => [name, join("vendor", target.triple, "bin", exe)] as const,
          )
        : [],
      command: "codex",
      installHint: "Install it with `npm install @openai/codex`, or pass `binaryPath`.",
    });
  }

  protected async launch(
    root: string,
    model: string,
    prompt: string,
    options: LaunchOptions,
    settings: AttemptSettings,
  ): Promise<AgentLaunch> {
    const home = join(root, "home");
    const codexHome = join(root, "codex-home");
    const tmp = join(root, "tmp");
    await Promise.all([home, codexHome, tmp].map((dir) => mkdir(dir, { recursive: true })));
    if (this.options.auth === "login") {
      const userHome = process.env.CODEX_HOME ?? join(homedir(), ".codex");
      await symlink(join(userHome, "auth.json"), join(codexHome, "auth.json")).catch(() => {});
    }
    const provider = this.provider();
    const env = agentEnvironment({
      ...this.options,
      env: { CODEX_HOME: codexHome, ...this.options.env },
      provider: [...codexProviderEnv, ...(provider ? [provider.envKey] : [])],
      drop: /^(CODEX_(?!API_KEY$)|XDG_)/,
      home,
      tmp,
    });
    // Codex 0.169 sends a key from CODEX_API_KEY only; OPENAI_API_KEY is the one users have.
    if (this.options.auth !== "login" && !env.CODEX_API_KEY && env.OPENAI_API_KEY) {
      env.CODEX_API_KEY = env.OPENAI_API_KEY;
    }
    // Codex's own helpers (rg) sit beside its binary in the npm package.
    const helpers = join(dirname(dirname(this.binary ?? "")), "codex-path");
    env.PATH = `${helpers}${delimiter}${env.PATH ?? ""}`;
    const overrides: Record<string, string | number | boolean> = {
      approval_policy: '"never"',
      // The attempt's directory and its private TMPDIR are writable; the shared /tmp is not.
      "sandbox_workspace_write.exclude_slash_tmp": true,
      "sandbox_workspace_write.network_access": false,
      web_search: '"disabled"',
      check_for_update_on_startup: false,
      // Measured: without these two, each run calls ab.chatgpt.com (metrics) and GitHub (plugins).
      "analytics.enabled": false,
      "features.plugins": false,
      // Codex writes its commands' shell environment under CODEX_HOME (`shell_snapshots/*.sh`):
      // no key of the attempt's may land on disk.
      "features.shell_snapshot": false,
      ...providerOverrides(provider),
      ...this.options.config,
    };
    const args = [
      "exec",
      "--json",
      "--ephemeral",
      "--skip-git-repo-check",
      "--ignore-user-config",
      "--ignore-rules",
      "--strict-config",
      "--cd",
      options.cwd,
      "--sandbox",
      // Inside taskledger's OS sandbox, which is the boundary, Codex's own would only stand in its way.
      options.readOnly
        ? "read-only"
        : (this.options.sandbox ?? (options.confined ? "danger-full-access" : "workspace-write")),
      "--model",
      model,
    ];
    for (const [key, value] of Object.entries(overrides)) args.push("-c", `${key}=${value}`);
    // `-`: the prompt comes from stdin, which is then closed.
    args.push("-");
    const translator = new CodexTranslator(settings.parseLimits);
    return {
      args,
      env,
      // Its login lives in the user's Codex directory, which no other process may read.
      ...(this.options.auth === "login"
        ? { read: [join(process.env.CODEX_HOME ?? join(homedir(), ".codex"), "auth.json")] }
        : {}),
      stdin: prompt,
      parse: (stdout, limits) => translateJsonLines(stdout, limits.maxLineBytes, translator),
      configRejection: (stderr) => /^Error[^:\n]*config[^:\n]*: (.+)$/im.exec(stderr)?.[0]?.trim(),
    };
  }
}

function providerOverrides(
  provider: (CodexProvider & { login?: boolean }) | undefined,
): Record<string, string> {
  if (!provider) return {};
  const id = provider.id ?? "taskledger";
  const fields = [
    `name=${JSON.stringify(id)}`,
    `base_url=${JSON.stringify(provider.baseUrl)}`,
    // A login signs in as Codex does with OpenAI (auth.json), not with a key variable.
    provider.login ? "requires_openai_auth=true" : `env_key=${JSON.stringify(provider.envKey)}`,
    `wire_api=${JSON.stringify(provider.wireApi ?? "responses")}`,
  ];
  if (provider.requestMaxRetries !== undefined) {
    fields.push(`request_max_retries=${provider.requestMaxRetries}`);
  }
  if (provider.streamMaxRetries !== undefined) {
    fields.push(`stream_max_retries=${provider.streamMaxRetries}`);
  }
  return { model_provider: JSON.stringify(id), [`model_providers.${id}`]: `{${fields.join(",")}}` };
}

/** The npm package and target triple of this platform's Codex binary. */
function codexTarget(): { package: string; triple: string } | undefined {
  const key = `${process.platform}-${process.arch}`;
  const triples: Record<string, string> = {
    "linux-x64": "x86_64-unknown-linux-musl",
    "linux-arm64": "aarch64-unknown-linux-musl",
    "darwin-x64": "x86_64-apple-darwin",
    "darwin-arm64": "aarch64-apple-darwin",
    "win32-x64": "x86_64-pc-windows-msvc",
    "win32-arm64": "aarch64-pc-windows-msvc",
  };
  const triple = triples[key];
  return triple ? { package: `@openai/codex-${key}`, triple } : undefined;
}

/** An executor that runs every attempt as a fresh Codex session. */
export function createCodexExecutor(options: CodexExecutorOptions): CodexExecutor {
  return new CodexExecutor(options);
}
