export { abortableDelay } from "./fakes/abortable-delay.js";
export {
  createFakeExecutor,
  type FakeAttempt,
  FakeExecutor,
  type FakeExecutorCall,
  type FakeExecutorOptions,
} from "./fakes/fake-executor.js";
export {
  createScriptedModel,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedResponse,
} from "./fakes/scripted-model.js";
export { createGitRepo, gitIn } from "./files/git-repo.js";
export { removeOnExit, tempDirectory } from "./files/temp-directory.js";
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
} from "./model-server/model-server.js";
export { scriptedOpencodeProvider } from "./model-server/opencode-provider.js";
export { insufficientQuotaError, overloadedError } from "./model-server/provider-errors.js";
export {
  type AcceptanceGapReply,
  acceptanceReply,
  afterToolResult,
  type ModelRole,
  type RoleReplies,
  type RoleScript,
  roleOf,
  scriptByRole,
  subTaskOf,
} from "./model-server/script-by-role.js";
export {
  alive,
  commandLineOf,
  killProcessesUnder,
  pollUntil,
  processesUnder,
} from "./processes/processes-under.js";
export {
  hasRedisServer,
  type RedisServer,
  redisMissingNote,
  redisTestsEnabled,
  startRedisServer,
} from "./processes/redis-server.js";
