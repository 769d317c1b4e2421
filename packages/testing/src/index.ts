export { abortableDelay } from "./abortable-delay.js";
export {
  createFakeExecutor,
  type FakeAttempt,
  FakeExecutor,
  type FakeExecutorCall,
  type FakeExecutorOptions,
} from "./fake-executor.js";
export { createGitRepo, gitIn } from "./git-repo.js";
export {
  createModelServer,
  type Face,
  type ModelServer,
  type ModelServerOptions,
  type RecordedRequest,
  type ScriptedCompletion,
  type ScriptedFinishReason,
  type ScriptedHang,
  type ScriptedHttpError,
  type ScriptedRawBody,
  type ScriptedReply,
  type ScriptedToolCall,
  type ScriptedUsage,
} from "./model-server.js";
export { scriptedOpencodeProvider } from "./opencode-provider.js";
export {
  alive,
  commandLineOf,
  killProcessesUnder,
  pollUntil,
  processesUnder,
} from "./processes-under.js";
export {
  hasRedisServer,
  type RedisServer,
  redisMissingNote,
  redisTestsEnabled,
  startRedisServer,
} from "./redis-server.js";
export {
  afterToolResult,
  type ModelRole,
  type RoleReplies,
  type RoleScript,
  roleOf,
  scriptByRole,
  subTaskOf,
} from "./script-by-role.js";
export {
  createScriptedModel,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedResponse,
} from "./scripted-model.js";
export { removeOnExit, tempDirectory } from "./temp-directory.js";
