import type { AgentEnvironmentOptions } from "./agent-environment.js";
import type { ClaudeCodeExecutorOptions } from "./claude-code-executor.js";
import type { CliAgentOptions } from "./cli-agent-executor.js";
import type { CodexExecutorOptions } from "./codex-executor.js";
import type { OpencodeExecutorOptions } from "./opencode-executor.js";
import type { OpencodeServerExecutorOptions } from "./opencode-server-executor.js";

// Every option each executor knows, so a misspelt one is refused by name (`refuseUnknownKeys`);
// a `Record` of every key, so an option added to a type but not here fails to compile.

const cliAgentKeys: Record<keyof CliAgentOptions, true> = {
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

const environmentKeys: Record<keyof AgentEnvironmentOptions, true> = {
  env: true,
  inheritEnv: true,
};

export const opencodeOptionKeys: Record<keyof OpencodeExecutorOptions, true> = {
  ...cliAgentKeys,
  ...environmentKeys,
  config: true,
  permission: true,
  inheritGlobalConfig: true,
  projectConfig: true,
  plugins: true,
  title: true,
};

export const opencodeServerOptionKeys: Record<keyof OpencodeServerExecutorOptions, true> = {
  ...opencodeOptionKeys,
  poolSize: true,
  serverStartTimeoutMs: true,
  serverHangMs: true,
  maxAttemptsPerServer: true,
  serverIdleMs: true,
};

export const claudeCodeOptionKeys: Record<keyof ClaudeCodeExecutorOptions, true> = {
  ...cliAgentKeys,
  ...environmentKeys,
  auth: true,
  permissionMode: true,
  tools: true,
  allowedTools: true,
  disallowedTools: true,
  mcpServers: true,
  settings: true,
  projectConfig: true,
};

export const codexOptionKeys: Record<keyof CodexExecutorOptions, true> = {
  ...cliAgentKeys,
  ...environmentKeys,
  auth: true,
  provider: true,
  sandbox: true,
  config: true,
};
