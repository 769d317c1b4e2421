export { reclaimProcesses } from "@taskledger/process";
export {
  type AgentEnvironmentInput,
  type AgentEnvironmentOptions,
  agentEnvironment,
  baseEnvironmentNames,
  environmentNamePattern,
} from "./agent/agent-environment.js";
export {
  type AgentName,
  AgentSwitchExecutor,
  agentNames,
  parseAgentModel,
} from "./agent/agent-switch.js";
export { decideOutcome, type ProcessEnd, tinyStopOutputTokens } from "./agent/attempt-outcome.js";
export { lostAttemptResult } from "./agent/attempt-result.js";
export {
  type AgentLaunch,
  CliAgentExecutor,
  type CliAgentOptions,
} from "./agent/cli-agent-executor.js";
export { defaultTranscriptLimits, Transcript, type TranscriptLimits } from "./agent/transcript.js";
export {
  ClaudeCodeExecutor,
  type ClaudeCodeExecutorOptions,
  claudeCodeProviderEnv,
  claudeCodeVersion,
  createClaudeCodeExecutor,
} from "./claude-code/claude-code-executor.js";
export {
  CodexExecutor,
  type CodexExecutorOptions,
  type CodexProvider,
  codexProviderEnv,
  codexVersion,
  createCodexExecutor,
} from "./codex/codex-executor.js";
export {
  defaultEventParseLimits,
  type EventParseLimits,
  type OpencodeEvent,
  parseOpencodeEvents,
} from "./events/agent-events.js";
export { opencodeHostVariables } from "./opencode/hermetic-environment.js";
export { resolveOpencodeBinary } from "./opencode/opencode-binary.js";
export {
  buildRunConfig,
  defaultPermission,
  type OpencodeConfig,
} from "./opencode/opencode-config.js";
export {
  createOpencodeExecutor,
  OpencodeExecutor,
  type OpencodeExecutorOptions,
  opencodeVersion,
} from "./opencode/opencode-executor.js";
export { opencodeKeyVariables } from "./opencode/opencode-provider-keys.js";
export {
  createOpencodeServerExecutor,
  defaultServerIdleMs,
  OpencodeServerExecutor,
  type OpencodeServerExecutorOptions,
} from "./opencode/server/opencode-server-executor.js";
