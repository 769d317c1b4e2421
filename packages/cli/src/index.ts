// `taskledger` is the one package a host needs: core's API, the providers, the opencode executor,
// the evaluator, telemetry, the queue of attempts for workers, and the command line.
export * from "@taskledger/core";
export {
  allOf,
  anyOf,
  type CheckContext,
  type Checker,
  type CheckResult,
  createEvaluator,
  type EvaluatorOptions,
} from "@taskledger/evaluator";
export {
  createOpencodeExecutor,
  createOpencodeServerExecutor,
  type OpencodeExecutorOptions,
  type OpencodeServerExecutorOptions,
} from "@taskledger/executor";
export { commitDiff, gitWorkspaces } from "@taskledger/git-workspace";
export {
  type CreateModelOptions,
  createModel,
  createPricing,
  type DefaultModels,
  defaultModels,
  type ModelWarning,
  type PricingOptions,
  type Provider,
} from "@taskledger/llm";
export {
  type AttemptWorker,
  type AttemptWorkerOptions,
  createQueueExecutor,
  type QueueExecutor,
  type QueueExecutorOptions,
  startAttemptWorker,
} from "@taskledger/queue";
export {
  createTelemetry,
  type ResumeTraceOptions,
  type Telemetry,
  type TelemetryOptions,
} from "@taskledger/telemetry";
export { runCli } from "./cli.js";
export { type CliIo, exitCodes } from "./cli-io.js";
export { createManager } from "./create-manager.js";
export { type JsonReport, toJsonReport } from "./json-report.js";
