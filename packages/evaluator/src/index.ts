export { type DigestOptions, defaultDigestTokens, digestAttempt } from "./attempt-digest.js";
export { type AttemptFingerprint, fingerprintAttempt, isStuck } from "./attempt-fingerprint.js";
export {
  type CheckContext,
  type Checker,
  type CheckResult,
  type NamedCheckResult,
  runChecker,
  toEvidence,
} from "./checker.js";
export {
  type CommandCheckerOptions,
  commandChecker,
  defaultCommandTimeoutMs,
} from "./command-checker.js";
export { allOf, anyOf, type CompositeOptions } from "./composite-checker.js";
export { checkerForCheck, type DeclaredCheckOptions } from "./declared-checks.js";
export {
  createEvaluator,
  type EvaluatorOptions,
  LedgerEvaluator,
} from "./evaluator.js";
export { fileExistsChecker } from "./file-exists-checker.js";
export { type FileMatchesOptions, fileMatchesChecker } from "./file-matches-checker.js";
export {
  finishReasonChecker,
  hadRejectedPermission,
  rejectedToolCalls,
} from "./finish-reason-checker.js";
export {
  buildJudgePrompt,
  type JudgeInput,
  type JudgeOutcome,
  judgeAttempt,
  judgeSystemPrompt,
} from "./judge.js";
export { type CommandRun, type RunCommandOptions, runCommand } from "./run-command.js";
