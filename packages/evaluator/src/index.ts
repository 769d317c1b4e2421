export {
  type CheckContext,
  type Checker,
  type CheckResult,
  type NamedCheckResult,
  runChecker,
  toEvidence,
} from "./checkers/checker.js";
export {
  type CommandCheckerOptions,
  commandChecker,
  defaultCommandTimeoutMs,
} from "./checkers/command-checker.js";
export { allOf, anyOf, type CompositeOptions } from "./checkers/composite-checker.js";
export { checkerForCheck, type DeclaredCheckOptions } from "./checkers/declared-checks.js";
export { fileExistsChecker } from "./checkers/file-exists-checker.js";
export { type FileMatchesOptions, fileMatchesChecker } from "./checkers/file-matches-checker.js";
export {
  finishReasonChecker,
  hadRejectedPermission,
  rejectedToolCalls,
} from "./checkers/finish-reason-checker.js";
export { type CommandRun, type RunCommandOptions, runCommand } from "./checkers/run-command.js";
export {
  createEvaluator,
  type EvaluatorOptions,
  LedgerEvaluator,
} from "./create-evaluator.js";
export { type DigestOptions, defaultDigestTokens, digestAttempt } from "./judge/attempt-digest.js";
export {
  type AttemptFingerprint,
  fingerprintAttempt,
  isStuck,
} from "./judge/attempt-fingerprint.js";
export {
  buildJudgePrompt,
  type JudgeInput,
  type JudgeOutcome,
  judgeAttempt,
  judgeSystemPrompt,
} from "./judge/judge.js";
