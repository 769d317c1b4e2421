export { decideOutcome, type ProcessEnd, tinyStopOutputTokens } from "./attempt-outcome.js";
export {
  buildRunConfig,
  defaultPermission,
  type OpencodeConfig,
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
export {
  createOpencodeServerExecutor,
  OpencodeServerExecutor,
  type OpencodeServerExecutorOptions,
} from "./opencode-server-executor.js";
export { defaultTranscriptLimits, Transcript, type TranscriptLimits } from "./transcript.js";
