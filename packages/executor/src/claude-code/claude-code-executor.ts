import { mkdir, symlink } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
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
import { ClaudeCodeTranslator } from "./claude-code-events.js";

/** The Claude Code release this package is tested against (its `@anthropic-ai/claude-code` dev dependency). */
export const claudeCodeVersion = "2.1.328";

/** The variables Claude Code signs in and finds its endpoint with, passed from the host when set. */
export const claudeCodeProviderEnv: readonly string[] = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_BASE_URL",
  "CLAUDE_CODE_OAUTH_TOKEN",
];

export interface ClaudeCodeExecutorOptions extends CliAgentOptions, AgentEnvironmentOptions {
  /** A model name or alias as `claude --model` takes it (`sonnet`, `claude-sonnet-4-5`, …). */
  model: string;
  /** The agent's endpoint (an Anthropic Messages API server): its `ANTHROPIC_BASE_URL`. */
  baseUrl?: string;
  /**
   * `api-key` (default): `ANTHROPIC_API_KEY` from the environment, and `--bare` (no hooks, plugins,
   * OAuth or keychain). `login`: the user's own Claude login: `CLAUDE_CODE_OAUTH_TOKEN` from the
   * environment (`claude setup-token`), or the credentials file of `~/.claude`, linked (never
   * copied) into the attempt's private home.
   */
  auth?: "api-key" | "login";
  /** Claude Code's permission mode; default `acceptEdits` (edits inside the directory, nothing asked). */
  permissionMode?: "acceptEdits" | "auto" | "bypassPermissions" | "manual" | "dontAsk" | "plan";
  /** Built-in tools offered (`login` only: `--bare` offers Bash, Edit and Read); default Claude Code's. */
  tools?: readonly string[];
  /** Permission rules allowed without asking (`Bash(npm test)`, …); default none. */
  allowedTools?: readonly string[];
  /** Permission rules always denied. */
  disallowedTools?: readonly string[];
  /** MCP servers (Claude Code's `mcpServers` object); no other MCP server is loaded. */
  mcpServers?: Record<string, unknown>;
  /** Settings passed with `--settings` (the user's own settings files are never read). */
  settings?: Record<string, unknown>;
  /** Read the project's `.claude/settings*.json` and its CLAUDE.md; default true. */
  projectConfig?: boolean;
}

// Every option it knows, so a misspelt one is refused by name; a key missing here fails to compile.
export const claudeCodeOptionKeys: Record<keyof ClaudeCodeExecutorOptions, true> = {
  ...cliAgentOptionKeys,
  ...agentEnvironmentOptionKeys,
  auth: true,
  permissionMode: true,
  tools: true,
  allowedTools: true,
  disallowedTools: true,
  mcpServers: true,
  settings: true,
  projectConfig: true,
  baseUrl: true,
};

/** Runs each attempt as a fresh `claude -p --output-format stream-json` session. */
export class ClaudeCodeExecutor extends CliAgentExecutor<ClaudeCodeExecutorOptions> {
  protected readonly agentName = "claude-code";

  constructor(options: ClaudeCodeExecutorOptions) {
    super(options, checkModelName);
    refuseUnknownKeys(options, claudeCodeOptionKeys, "createClaudeCodeExecutor");
  }

  protected override pricedModel(model: string): string {
    return `anthropic/${model}`;
  }

  protected resolveBinary(binaryPath: string | undefined): string {
    const platform = `${process.platform}-${process.arch}`;
    const exe = process.platform === "win32" ? "claude.exe" : "claude";
    return resolveAgentBinary({
      binaryPath,
      packageFiles: [
        [`@anthropic-ai/claude-code-${platform}`, exe],
        [`@anthropic-ai/claude-code-${platform}-musl`, exe],
        ["@anthropic-ai/claude-code", join("bin", "claude.exe")],
      ],
      command: "claude",
      installHint:
        "Install it with `npm install @anthropic-ai/claude-code` (no postinstall needed), or pass `binaryPath`.",
    });
  }

  protected async launch(
    root: string,
    model: string,
    prompt: string,
    options: LaunchOptions,
    settings: AttemptSettings,
  ): Promise<AgentLaunch> {
    const login = this.options.auth === "login";
    const home = join(root, "home");
    const tmp = join(root, "tmp");
    await Promise.all([
      mkdir(join(home, ".claude"), { recursive: true }),
      mkdir(tmp, { recursive: true }),
    ]);
    if (login) await linkCredentials(join(home, ".claude", ".credentials.json"));
    const env = agentEnvironment({
      ...this.options,
      env: {
        DISABLE_AUTOUPDATER: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        // It refuses to skip its prompts as root outside a sandbox; this one is inside one.
        ...(options.confined ? { IS_SANDBOX: "1" } : {}),
        ...(this.options.baseUrl === undefined ? {} : { ANTHROPIC_BASE_URL: this.options.baseUrl }),
        ...this.options.env,
      },
      provider: claudeCodeProviderEnv,
      // The user's own Claude config (`CLAUDE_CONFIG_DIR`, …) but for the ways to sign in.
      drop: /^(CLAUDE(?!_CODE_OAUTH_TOKEN$)|XDG_)/,
      home,
      tmp,
    });
    const project = this.options.projectConfig ?? true;
    const args = [
      "-p",
      "--output-format",
      "stream-json",
      "--verbose",
      "--include-partial-messages",
      "--model",
      model,
      "--permission-mode",
      // Plan mode reads and searches and changes nothing: a read-only attempt's. Inside the OS
      // sandbox it runs its commands without asking, as Claude Code's own sandboxed mode does.
      options.readOnly
        ? "plan"
        : (this.options.permissionMode ?? (options.confined ? "bypassPermissions" : "acceptEdits")),
      // Nobody answers a prompt: anything that would ask is denied, and the attempt goes on.
      "--permission-prompts",
      "none",
      "--no-session-persistence",
      "--setting-sources",
      project ? "project,local" : "",
      "--strict-mcp-config",
      "--mcp-config",
      JSON.stringify({ mcpServers: this.options.mcpServers ?? {} }),
    ];
    // --bare skips CLAUDE.md discovery; --add-dir gives the project's own back.
    if (!login) args.push("--bare", ...(project ? ["--add-dir", options.cwd] : []));
    if (this.options.tools) args.push("--tools", this.options.tools.join(","));
    if (this.options.allowedTools?.length)
      args.push("--allowedTools", this.options.allowedTools.join(","));
    if (this.options.disallowedTools?.length) {
      args.push("--disallowedTools", this.options.disallowedTools.join(","));
    }
    if (this.options.settings) args.push("--settings", JSON.stringify(this.options.settings));
    const translator = new ClaudeCodeTranslator(settings.parseLimits);
    return {
      args,
      env,
      // Its login lives in the user's Claude directory, which no other process may read.
      ...(login ? { read: [credentialsFile()] } : {}),
      stdin: prompt,
      parse: (stdout, limits) => translateJsonLines(stdout, limits.maxLineBytes, translator),
      costUsd: () => translator.costUsd,
      configRejection: (stderr) => /^error: (.+)$/im.exec(stderr)?.[1]?.trim(),
    };
  }
}

/** Links the user's Claude credentials file into the attempt's home; nothing is copied. */
async function linkCredentials(target: string): Promise<void> {
  await symlink(credentialsFile(), target).catch(() => {});
}

/** The user's Claude login. */
function credentialsFile(): string {
  return join(process.env.CLAUDE_CONFIG_DIR ?? join(homedir(), ".claude"), ".credentials.json");
}

/** An executor that runs every attempt as a fresh Claude Code session. */
export function createClaudeCodeExecutor(options: ClaudeCodeExecutorOptions): ClaudeCodeExecutor {
  return new ClaudeCodeExecutor(options);
}
