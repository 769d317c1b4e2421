// `taskledger` is the one package a library host needs: core's API, the providers, the opencode
// executors, the evaluator and telemetry. The command line (`taskledger/cli`) and the queue of
// attempts for workers (`taskledger/queue`) are entry points of their own, so importing this one
// loads neither them nor the page or the testing kit.
export * from "@taskledger/core";
export {
  allOf,
  anyOf,
  type CheckContext,
  type Checker,
  type CheckResult,
  type CommandCheckerOptions,
  commandChecker,
  createEvaluator,
  type EvaluatorOptions,
  type FileMatchesOptions,
  fileExistsChecker,
  fileMatchesChecker,
  finishReasonChecker,
} from "@taskledger/evaluator";
export {
  createOpencodeExecutor,
  createOpencodeServerExecutor,
  type OpencodeExecutorOptions,
  type OpencodeServerExecutorOptions,
} from "@taskledger/executor";
export {
  type CleanOptions,
  type CleanResult,
  cleanRepository,
  commitDiff,
  type GitWorkspaceOptions,
  gitWorkspaces,
} from "@taskledger/git-workspace";
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
export { createSandbox, parseHost, type SandboxOptions } from "@taskledger/sandbox";
export {
  createTelemetry,
  type ResumeTraceOptions,
  type Telemetry,
  type TelemetryOptions,
} from "@taskledger/telemetry";
export { type JsonReport, toJsonReport } from "./output/json-report.js";
export { createManager } from "./runtime/create-manager.js";
