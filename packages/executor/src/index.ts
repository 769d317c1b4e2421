export {
  type AgentEnvironmentInput,
  type AgentEnvironmentOptions,
  agentEnvironment,
  baseEnvironmentNames,
  environmentNamePattern,
} from "./agent-environment.js";
export {
  type AgentName,
  AgentSwitchExecutor,
  agentNames,
  parseAgentModel,
} from "./agent-switch.js";
export { decideOutcome, type ProcessEnd, tinyStopOutputTokens } from "./attempt-outcome.js";
export { lostAttemptResult } from "./attempt-result.js";
export {
  ClaudeCodeExecutor,
  type ClaudeCodeExecutorOptions,
  claudeCodeProviderEnv,
  claudeCodeVersion,
  createClaudeCodeExecutor,
} from "./claude-code-executor.js";
export { type AgentLaunch, CliAgentExecutor, type CliAgentOptions } from "./cli-agent-executor.js";
export {
  CodexExecutor,
  type CodexExecutorOptions,
  type CodexProvider,
  codexProviderEnv,
  codexVersion,
  createCodexExecutor,
} from "./codex-executor.js";
export {
  buildRunConfig,
  defaultPermission,
  type OpencodeConfig,
  opencodeHostVariables,
} from "./hermetic-config.js";
export { resolveOpencodeBinary } from "./opencode-binary.js";
export {
  defaultEventParseLimits,
  type EventParseLimits,
  type OpencodeEvent,
  parseOpencodeEvents,
} from "./opencode-events.js";
export {
  createOpencodeExecutor,
  OpencodeExecutor,
  type OpencodeExecutorOptions,
  opencodeVersion,
} from "./opencode-executor.js";
export { opencodeKeyVariables } from "./opencode-provider-keys.js";
export {
  createOpencodeServerExecutor,
  defaultServerIdleMs,
  OpencodeServerExecutor,
  type OpencodeServerExecutorOptions,
} from "./opencode-server-executor.js";
export { reclaimProcesses } from "./process-tree.js";
export { defaultTranscriptLimits, Transcript, type TranscriptLimits } from "./transcript.js";
