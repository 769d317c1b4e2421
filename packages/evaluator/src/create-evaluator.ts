import {
  addUsage,
  type Check,
  type CheckRun,
  clipMiddle,
  type EvaluateOptions,
  type EvaluationInput,
  type Evaluator,
  type Evidence,
  emptyUsage,
  type IncompleteReason,
  InvalidConfigError,
  judgeEvidenceSource,
  judgeUnavailableEvidenceSource,
  type LanguageModel,
  oneLine,
  type ProgressEntry,
  progressEntrySchema,
  stuckEvidenceSource,
} from "@taskledger/core";
import { throwIfAborted } from "./abort.js";
import {
  type CheckContext,
  type Checker,
  type NamedCheckResult,
  runChecker,
  toEvidence,
} from "./checkers/checker.js";
import { checkerForCheck } from "./checkers/declared-checks.js";
import { finishReasonChecker } from "./checkers/finish-reason-checker.js";
import { defaultDigestTokens, digestAttempt } from "./judge/attempt-digest.js";
import { fingerprintAttempt } from "./judge/attempt-fingerprint.js";
import { type JudgeOutcome, judgeAttempt } from "./judge/judge.js";

export interface EvaluatorOptions {
  /** The judge. Without one, an attempt is complete when every checker passes. */
  model?: LanguageModel;
  /** The host's own checkers, run after the built-in ones; each one's result is evidence. */
  checkers?: readonly Checker[];
  /** Tokens the attempt's digest may take in the judge's prompt. Default 3,000. */
  digestTokens?: number;
  /** For declared command checks without their own timeout. Default 120,000 ms. */
  commandTimeoutMs?: number;
  /** Output bytes kept per stream of a command check. Default 8 KiB. */
  maxOutputBytes?: number;
  /** The environment of declared command checks; default the host's (`process.env`). */
  commandEnv?: Readonly<Record<string, string>>;
  /** `always` (default) lets the judge write feedback even when a check already failed. */
  judge?: "always" | "when-checks-pass";
  /** Most tokens the judge may answer with. Default 2,000. */
  judgeMaxOutputTokens?: number;
  /** Compare each attempt with the previous one of the same sub-task. Default true. */
  stuckDetection?: boolean;
}

const limits = { summary: 4000, outputData: 20_000, feedback: 4000 };

/**
 * Evidence first: the finish reason, the sub-task's declared checks (run for real in its working
 * directory) and the host's checkers; then, with a model, the judge on a bounded digest. A failing
 * check makes the entry incomplete whatever the judge says.
 */
export class LedgerEvaluator implements Evaluator {
  private readonly options: EvaluatorOptions;

  constructor(options: EvaluatorOptions = {}) {
    validate(options);
    this.options = options;
  }

  async evaluate(
    input: EvaluationInput,
    { abortSignal, guardProcess, sandbox, governModel }: EvaluateOptions,
  ): Promise<ProgressEntry> {
    throwIfAborted(abortSignal);
    const { result, subTask } = input;
    const context: CheckContext = {
      ...input,
      abortSignal,
      ...(guardProcess ? { guardProcess } : {}),
      ...(sandbox ? { sandbox } : {}),
    };
    // A cancelled attempt is incomplete by its finish alone; running its commands would be waste.
    const checkers: Checker[] =
      result.outcome === "cancelled"
        ? [finishReasonChecker()]
        : [
            finishReasonChecker(),
            ...subTask.checks.map((check) => checkerForCheck(check, this.declaredOptions())),
            ...(this.options.checkers ?? []),
          ];
    // One at a time: command checks share the working directory and the machine.
    const results: NamedCheckResult[] = [];
    for (const checker of checkers) results.push(await runChecker(checker, context));
    const evidence: Evidence[] = results.map(toEvidence);
    const failed = results.filter((item) => !item.complete);

    // Through the run's governor, when given: a judge call its provider refuses waits, not fails.
    const own = this.options.model;
    const model = own && governModel ? governModel(own) : own;
    let judged: JudgeOutcome | undefined;
    const judgeWanted =
      model !== undefined &&
      result.outcome !== "cancelled" &&
      ((this.options.judge !== "when-checks-pass" && input.judge !== "when-checks-pass") ||
        failed.length === 0);
    if (model && judgeWanted) {
      judged = await judgeAttempt(model, {
        request: input.request,
        subTask,
        attempt: input.attempt,
        digest: digestAttempt(result, {
          maxTokens: this.options.digestTokens ?? defaultDigestTokens,
        }),
        evidence,
        abortSignal,
        maxOutputTokens: this.options.judgeMaxOutputTokens ?? 2000,
      });
      evidence.push(judgeEvidence(judged));
    }

    const judgeSaysDone =
      judged === undefined ? model === undefined : judged.ok && judged.judgment.completed;
    const completed = failed.length === 0 && judgeSaysDone;
    const { fingerprint, stuck } = await this.trackProgress(input, completed);
    if (stuck) evidence.push(stuck);

    const entry: ProgressEntry = {
      completed,
      ...(completed
        ? {}
        : { incomplete: incompleteReason(input, judged, failed, stuck !== undefined) }),
      ...(fingerprint ? { fingerprint } : {}),
      summary: clipMiddle(summaryOf(input, judged, failed, completed), limits.summary),
      outputData: completed ? clipMiddle(outputOf(input, judged), limits.outputData) : "",
      feedback: completed ? "" : clipMiddle(feedbackOf(judged, failed, stuck), limits.feedback),
      evidence,
      usage: judged?.usage ?? addUsage(),
    };
    // Clipped above to the schema's limits; parsing proves it and fills nothing in.
    return progressEntrySchema.parse(entry);
  }

  async runChecks(
    checks: readonly Check[],
    options: EvaluateOptions & { cwd: string; maxDetailChars?: number },
  ): Promise<CheckRun[]> {
    const runs: CheckRun[] = [];
    // A check reads only its directory, signal and guard; the rest describes no attempt.
    const context: CheckContext = {
      request: "",
      subTask: {
        id: "baseline",
        title: "baseline",
        description: "baseline",
        successCriteria: ["passes"],
        dependsOn: [],
        checks: [],
      },
      attempt: 0,
      result: {
        outcome: "finished",
        finalText: "",
        toolCalls: [],
        stepFinishReasons: [],
        filesChanged: [],
        usage: emptyUsage(),
        durationMs: 0,
      },
      cwd: options.cwd,
      abortSignal: options.abortSignal,
      ...(options.guardProcess ? { guardProcess: options.guardProcess } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    };
    for (const check of checks) {
      const result = await runChecker(checkerForCheck(check, this.declaredOptions()), context);
      const maxChars = Math.min(options.maxDetailChars ?? 600, 20_000);
      runs.push({ passed: result.complete, detail: clipMiddle(result.detail ?? "", maxChars) });
    }
    return runs;
  }

  private declaredOptions() {
    return {
      ...(this.options.commandTimeoutMs ? { commandTimeoutMs: this.options.commandTimeoutMs } : {}),
      ...(this.options.maxOutputBytes ? { maxOutputBytes: this.options.maxOutputBytes } : {}),
      ...(this.options.commandEnv ? { env: this.options.commandEnv } : {}),
    };
  }

  /**
   * Fingerprints an incomplete attempt; a `stuck` item when it repeats the previous attempt, whose
   * fingerprint the run's log kept (`input.previous`), so the comparison survives a restart.
   */
  private async trackProgress(
    input: EvaluationInput,
    completed: boolean,
  ): Promise<{ fingerprint?: string; stuck?: Evidence }> {
    if (this.options.stuckDetection === false || completed) return {};
    const fingerprint = await fingerprintAttempt(input.result, input.cwd);
    const previous = input.previous;
    if (previous?.attempt !== input.attempt - 1 || previous.fingerprint !== fingerprint.id)
      return { fingerprint: fingerprint.id };
    return {
      fingerprint: fingerprint.id,
      stuck: {
        source: stuckEvidenceSource,
        passed: false,
        detail:
          `Attempt ${input.attempt} repeated attempt ${previous.attempt} exactly: the same outcome ` +
          `(${fingerprint.outcome}), the same files with the same content, the same final text and ` +
          "the same tool calls. It made no progress.",
      },
    };
  }
}

/** The evaluator a host passes to `createManager({ evaluator })`; with `model`, it judges too. */
export function createEvaluator(options: EvaluatorOptions = {}): LedgerEvaluator {
  return new LedgerEvaluator(options);
}

function judgeEvidence(judged: JudgeOutcome): Evidence {
  if (!judged.ok)
    return {
      source: judgeUnavailableEvidenceSource,
      passed: false,
      detail: clipMiddle(judged.reason, 4000),
    };
  const { judgment } = judged;
  const detail = judgment.completed
    ? `complete: ${judgment.summary}`
    : `incomplete: ${judgment.feedback || judgment.summary}`;
  return {
    source: judgeEvidenceSource,
    passed: judgment.completed,
    detail: clipMiddle(detail, 4000),
  };
}

/** The ladder reads this, not the evidence: the most telling reason first. */
function incompleteReason(
  input: EvaluationInput,
  judged: JudgeOutcome | undefined,
  failed: readonly NamedCheckResult[],
  stuck: boolean,
): IncompleteReason {
  if (stuck) return "stuck";
  if (failed.length > 0) {
    const finishOnly = failed.every((item) => item.name === "finish-reason");
    return finishOnly && input.result.outcome !== "finished" ? "not-finished" : "checks-failed";
  }
  if (judged && !judged.ok) return "judge-unavailable";
  return "judged-incomplete";
}

function summaryOf(
  input: EvaluationInput,
  judged: JudgeOutcome | undefined,
  failed: readonly NamedCheckResult[],
  completed: boolean,
): string {
  const base =
    judged?.ok === true
      ? judged.judgment.summary.trim()
      : clipMiddle(input.result.finalText.trim(), 500) ||
        `The attempt ended: ${input.result.outcome}.`;
  if (completed || failed.length === 0) return base;
  const names = failed.map((item) => item.name).join(", ");
  return `Incomplete: failed ${oneLine(names, 300)}. ${base}`;
}

function outputOf(input: EvaluationInput, judged: JudgeOutcome | undefined): string {
  if (judged?.ok === true && judged.judgment.outputData.trim()) return judged.judgment.outputData;
  return input.result.finalText.trim().slice(0, 8000);
}

/** What the next attempt must do: no progress first, then failed checks, then the judge's view. */
function feedbackOf(
  judged: JudgeOutcome | undefined,
  failed: readonly NamedCheckResult[],
  stuck: Evidence | undefined,
): string {
  const lines: string[] = [];
  if (stuck) {
    lines.push(
      "The previous attempt repeated the one before it exactly and made no progress: take a " +
        "different approach rather than the same steps.",
    );
  }
  for (const item of failed.slice(0, 6)) {
    lines.push(clipMiddle(item.feedback?.trim() || `${item.name} failed.`, 900));
  }
  if (judged?.ok === true) {
    const { judgment } = judged;
    if (!judgment.completed && judgment.feedback.trim()) lines.push(judgment.feedback.trim());
    else if (!judgment.completed) lines.push(`Not yet complete: ${judgment.summary.trim()}`);
  } else if (judged) {
    lines.push(
      `The attempt could not be judged (${oneLine(judged.reason, 300)}), so its completion is ` +
        "unproven. Meet every success criterion and end with an account naming the files " +
        "written and commands run.",
    );
  }
  return lines.join("\n") || "Incomplete; no checker said why.";
}

function validate(options: EvaluatorOptions): void {
  const { digestTokens, commandTimeoutMs, maxOutputBytes, judgeMaxOutputTokens } = options;
  if (digestTokens !== undefined && (!Number.isFinite(digestTokens) || digestTokens < 200)) {
    throw new InvalidConfigError(`digestTokens must be at least 200, not ${digestTokens}`);
  }
  for (const [name, value] of Object.entries({
    commandTimeoutMs,
    maxOutputBytes,
    judgeMaxOutputTokens,
  })) {
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw new InvalidConfigError(`${name} must be a positive integer, not ${value}`);
    }
  }
  for (const checker of options.checkers ?? []) {
    if (typeof (checker as Partial<Checker>)?.check !== "function") {
      throw new InvalidConfigError("Every checker needs a check(context) method");
    }
  }
}
