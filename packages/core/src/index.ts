export {
  bindToHost,
  commandLineOf,
  createProcessDir,
  currentProcess,
  type HostBinding,
  isHolderAlive,
  isProcessAlive,
  type ProcessIdentity,
  processStartTime,
  sweepDeadProcessDirs,
} from "@taskledger/process/lifetime";
export { outcomeEvaluator } from "./attempt/outcome-evaluator.js";
export { buildSubTaskPrompt, type SubTaskPromptInput } from "./attempt/sub-task-prompt.js";
export {
  type CandidateChoiceAnswer,
  candidateChoiceSchema,
  candidateChoiceSchemaName,
  candidateJudgeTokenBudget,
} from "./best-of/candidate-judge.js";
export { describeError } from "./errors/describe-error.js";
export {
  AbortedError,
  ExecutorError,
  InvalidConfigError,
  InvalidRequestError,
  isAbortError,
  ModelError,
  type PlanIssue,
  type PlanIssueKind,
  PlanReviewError,
  PlanValidationError,
  QueueError,
  type QueueErrorReason,
  RunNotFoundError,
  SandboxUnavailableError,
  StoreError,
  StructuredOutputError,
  TaskLedgerError,
  type TaskLedgerErrorCode,
  type TaskLedgerErrorOptions,
  UnexpectedCallError,
  UnsupportedLogVersionError,
  WorkspaceError,
  type WorkspaceErrorReason,
} from "./errors/errors.js";
export {
  type AcceptanceAnswer,
  acceptanceSchema,
  acceptanceSchemaName,
} from "./integration/acceptance.js";
export { gateId } from "./integration/integration-gate.js";
export {
  buildDependencyContext,
  type CompletedOutput,
  type DependencyContext,
} from "./ledger/dependency-context.js";
export {
  type Evidence,
  evidenceSchema,
  type IncompleteReason,
  incompleteReasonOf,
  incompleteReasonSchema,
  isJudgeUnavailable,
  isStuckEntry,
  judgeEvidenceSource,
  judgeUnavailableEvidenceSource,
  type ProgressEntry,
  type ProgressJudgment,
  progressEntrySchema,
  progressJudgmentSchema,
  progressJudgmentSchemaName,
  stuckEvidenceSource,
} from "./ledger/progress-entry.js";
export {
  type Check,
  type CheckInput,
  checkSchema,
  type SubTask,
  type SubTaskInput,
  subTaskIdSchema,
  subTaskSchema,
} from "./ledger/sub-task.js";
export {
  defaultMaxSubTasks,
  type Fact,
  factSchema,
  maxFacts,
  type TaskLedger,
  type TaskLedgerInput,
  taskLedgerSchema,
  taskLedgerSchemaName,
  type ValidateTaskLedgerOptions,
  validateTaskLedger,
} from "./ledger/task-ledger.js";
export { applyRunEvent } from "./log/apply-run-event.js";
export {
  type AcceptanceGap,
  type BudgetExhaustion,
  type CandidateOutcome,
  type CandidateRoundReason,
  type GateCheckResult,
  type RunEvent,
  type RunEventOf,
  type RunEventType,
  runLogVersion,
  type SubTaskMerge,
  type TraceRef,
} from "./log/run-events.js";
export { recoverRun } from "./log/run-recovery.js";
export {
  type AttemptUsage,
  type CandidateChoice,
  type CandidateMember,
  type CandidateRound,
  createRunState,
  currentLedger,
  elapsedMs,
  isFinal,
  type RunState,
  type SubTaskState,
} from "./log/run-state.js";
export {
  callStructured,
  type StructuredCall,
  type StructuredCallResult,
} from "./model-call/structured-call.js";
export { parseStructuredOutput } from "./model-call/structured-output.js";
export type { PlanReview, PlanReviewDecision, ReviewPlan } from "./plan/plan-review.js";
export { type DecomposePolicy, type PlanResult, singleSubTaskLedger } from "./plan/planner.js";
export { isTrivialRequest } from "./plan/trivial-request.js";
export type { CheckRun, EvaluateOptions, EvaluationInput, Evaluator } from "./ports/evaluator.js";
export type {
  AgentEvent,
  AttemptOutcome,
  AttemptProcess,
  AttemptResult,
  ExecuteOptions,
  Executor,
  ProviderLimit,
  ToolCallRecord,
} from "./ports/executor.js";
export type {
  FinishReason,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  ModelMessage,
  StructuredOutput,
} from "./ports/model.js";
export {
  type ProjectCommand,
  type ProjectDigest,
  type ProjectSource,
  projectDigestTokens,
} from "./ports/project-source.js";
export {
  definedOnly,
  type Sandbox,
  type SandboxedLaunch,
  type SandboxLaunch,
  type SandboxMode,
  type SandboxRefusal,
  type SandboxStatus,
  sandboxModes,
  unconfined,
} from "./ports/sandbox.js";
export type {
  AttemptCapture,
  AttemptSpace,
  EnvironmentSettings,
  Integration,
  Isolation,
  OpenWorkspaceInput,
  OutsideChanges,
  RunWorkspace,
  SetupSettings,
  SlotPreparation,
  WorkspaceOutcome,
  WorkspaceProvider,
  WorkspaceRecord,
} from "./ports/workspace.js";
export { buildReport, type ReportContext } from "./report/build-report.js";
export {
  type CandidateRoundReport,
  candidateRoundReportSchema,
  type RunReport,
  type RunStatus,
  runReportSchema,
  runReportVersion,
  runStatusSchema,
  type SubTaskFailure,
  type SubTaskReport,
  type SubTaskStatus,
  subTaskFailureSchema,
  subTaskReportSchema,
  subTaskStatusSchema,
} from "./report/run-report.js";
export { decideNext, type LadderDecision, type LadderOptions } from "./run/decide-next.js";
export { createManager, Manager, type RunOptions } from "./run/manager.js";
export { defaultRunSettings, type ManagerOptions } from "./run/manager-options.js";
export { TaskRun } from "./run/task-run.js";
export { describeGiven, refuseUnknownKeys } from "./settings/host-input-check.js";
export {
  type BestOf,
  type BestOfInput,
  type IntegrationMode,
  integrationModes,
  maxCandidates,
  type RunBudget,
  type RunSettings,
  type RunSettingsInput,
  resolveRunSettings,
} from "./settings/run-settings.js";
export { FileRunStore } from "./store/file-run-store.js";
export { MemoryRunStore, type RunStore } from "./store/run-store.js";
export { HeadTailBuffer } from "./text/head-tail-buffer.js";
export { stripControl } from "./text/strip-control.js";
export { clipMiddle, clipStart, oneLine } from "./text/text-clip.js";
export { estimateTokens, truncateToTokens } from "./text/tokens.js";
export {
  costOf,
  type ModelPrice,
  type PricedCall,
  type PriceTable,
  type Pricing,
  priceCall,
  priceIn,
  withCost,
} from "./usage/call-cost.js";
export {
  addUsage,
  emptyUsage,
  knownCost,
  totalTokens,
  type Usage,
  usageSchema,
} from "./usage/usage.js";
export { sharedWorkspace, sharedWorkspaces } from "./workspace/shared-workspace.js";
