export { applyRunEvent } from "./apply-run-event.js";
export { bindToHost, type HostBinding } from "./bind-to-host.js";
export { buildReport, type ReportContext } from "./build-report.js";
export {
  type CandidateChoiceAnswer,
  candidateChoiceSchema,
  candidateChoiceSchemaName,
  candidateJudgeTokenBudget,
} from "./candidate-judge.js";
export { decideNext, type LadderDecision, type LadderOptions } from "./decide-next.js";
export {
  buildDependencyContext,
  type CompletedOutput,
  type DependencyContext,
} from "./dependency-context.js";
export { describeError } from "./describe-error.js";
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
} from "./errors.js";
export {
  type CheckRun,
  type EvaluateOptions,
  type EvaluationInput,
  type Evaluator,
  outcomeEvaluator,
} from "./evaluator.js";
export type {
  AgentEvent,
  AttemptOutcome,
  AttemptProcess,
  AttemptResult,
  ExecuteOptions,
  Executor,
  ToolCallRecord,
} from "./executor.js";
export { FileRunStore } from "./file-run-store.js";
export { HeadTailBuffer } from "./head-tail-buffer.js";
export { describeGiven, refuseUnknownKeys } from "./host-input-check.js";
export { createManager, Manager, type RunOptions } from "./manager.js";
export { defaultRunSettings, type ManagerOptions } from "./manager-options.js";
export type {
  FinishReason,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  ModelMessage,
  StructuredOutput,
} from "./model.js";
export type { PlanReview, PlanReviewDecision, ReviewPlan } from "./plan-review.js";
export { type DecomposePolicy, type PlanResult, singleSubTaskLedger } from "./planner.js";
export {
  costOf,
  type ModelPrice,
  type PricedCall,
  type PriceTable,
  type Pricing,
  priceCall,
  priceIn,
  withCost,
} from "./price.js";
export { createProcessDir, isProcessAlive, sweepDeadProcessDirs } from "./process-dirs.js";
export {
  commandLineOf,
  currentProcess,
  isHolderAlive,
  type ProcessIdentity,
  processStartTime,
} from "./process-identity.js";
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
} from "./progress-entry.js";
export {
  type ProjectCommand,
  type ProjectDigest,
  type ProjectSource,
  projectDigestTokens,
} from "./project-digest.js";
export { buildSubTaskPrompt, type SubTaskPromptInput } from "./prompts.js";
export type {
  BudgetExhaustion,
  CandidateOutcome,
  CandidateRoundReason,
  RunEvent,
  RunEventOf,
  RunEventType,
  SubTaskMerge,
  TraceRef,
} from "./run-events.js";
export { recoverRun, runLogVersion } from "./run-recovery.js";
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
} from "./run-report.js";
export {
  type BestOf,
  type BestOfInput,
  maxCandidates,
  type RunBudget,
  type RunSettings,
  type RunSettingsInput,
  resolveRunSettings,
} from "./run-settings.js";
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
} from "./run-state.js";
export { MemoryRunStore, type RunStore } from "./run-store.js";
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
} from "./sandbox.js";
export { stripControl } from "./strip-control.js";
export {
  callStructured,
  type StructuredCall,
  type StructuredCallResult,
} from "./structured-call.js";
export { parseStructuredOutput } from "./structured-output.js";
export {
  type Check,
  type CheckInput,
  checkSchema,
  type SubTask,
  type SubTaskInput,
  subTaskIdSchema,
  subTaskSchema,
} from "./sub-task.js";
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
} from "./task-ledger.js";
export { TaskRun } from "./task-run.js";
export { clipMiddle, clipStart, oneLine } from "./text-clip.js";
export { estimateTokens, truncateToTokens } from "./tokens.js";
export { isTrivialRequest } from "./trivial-request.js";
export {
  addUsage,
  emptyUsage,
  knownCost,
  totalTokens,
  type Usage,
  usageSchema,
} from "./usage.js";
export {
  type AttemptCapture,
  type AttemptSpace,
  type EnvironmentSettings,
  type Integration,
  type Isolation,
  type OpenWorkspaceInput,
  type OutsideChanges,
  type RunWorkspace,
  type SetupSettings,
  type SlotPreparation,
  sharedWorkspace,
  sharedWorkspaces,
  type WorkspaceOutcome,
  type WorkspaceProvider,
  type WorkspaceRecord,
} from "./workspace.js";
