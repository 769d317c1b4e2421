import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { Check, SubTask } from "../ledger/sub-task.js";
import type { AttemptProcess, AttemptResult } from "./executor.js";
import type { LanguageModel } from "./model.js";
import type { Sandbox } from "./sandbox.js";

export interface EvaluationInput {
  /** The run the attempt belongs to, so an evaluator can keep per-run memory apart. */
  runId: string;
  request: string;
  subTask: SubTask;
  attempt: number;
  result: AttemptResult;
  cwd: string;
  /**
   * The sub-task's last evaluated attempt before this one, with the fingerprint its entry kept:
   * comparing with it finds an attempt that repeated the previous one, across restarts too.
   */
  previous?: { attempt: number; fingerprint?: string };
  /**
   * `when-checks-pass`: ask a judge only when every check passed, whatever the evaluator's own
   * setting. A round's candidates ask it: one that failed its checks has lost, a judge call would
   * only pay for a verdict already known.
   */
  judge?: "when-checks-pass";
}

export interface EvaluateOptions {
  abortSignal: AbortSignal;
  /** Call with each process started while evaluating (checks); call what it returns when it ends. */
  guardProcess?: (process: AttemptProcess) => () => void;
  /** The OS boundary checks run inside, as the attempts do. */
  sandbox?: Sandbox;
  /**
   * The run's provider governor around a model the evaluator calls: a call its provider refuses
   * (429, 529) waits out the limit with the run's other calls and is asked again.
   */
  governModel?(model: LanguageModel): LanguageModel;
}

/** One check run on its own, outside an evaluation (the project's commands before any change). */
export interface CheckRun {
  passed: boolean;
  /** What it showed: the exit code and the end of its output, bounded. */
  detail: string;
}

/** Judges one attempt into a Progress Ledger entry. */
export interface Evaluator {
  evaluate(input: EvaluationInput, options: EvaluateOptions): Promise<ProgressEntry>;
  /**
   * Runs checks in `cwd` as an evaluation would, one at a time, judging nothing; the manager runs
   * the project's own commands this way once before any change, and adds to sub-tasks' checks
   * only those that pass there. An evaluator without it gets them all.
   */
  runChecks?(
    checks: readonly Check[],
    options: EvaluateOptions & {
      cwd: string;
      /** How much of each check's output `detail` keeps (the evaluator's default when absent). */
      maxDetailChars?: number;
    },
  ): Promise<CheckRun[]>;
}
