import type { AttemptProcess, AttemptResult } from "./executor.js";
import type { ProgressEntry } from "./progress-entry.js";
import type { Sandbox } from "./sandbox.js";
import type { Check, SubTask } from "./sub-task.js";
import { emptyUsage } from "./usage.js";

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
    options: EvaluateOptions & { cwd: string },
  ): Promise<CheckRun[]>;
}

const outputLimit = 8000;

const outcomeFeedback: Record<AttemptResult["outcome"], string> = {
  finished: "",
  truncated:
    "The previous attempt was cut off before it finished (its output ran out). Work in smaller " +
    "steps, keep messages short and finish the remaining work.",
  error: "The previous attempt ended with an error.",
  timeout: "The previous attempt ran out of time. Do less per step and finish the remaining work.",
  cancelled: "The previous attempt was cancelled.",
};

/**
 * The evaluator used when no other is given: an attempt is complete when the agent finished on
 * its own. It needs no model; the LLM judge of `@taskledger/evaluator` replaces it.
 */
export const outcomeEvaluator: Evaluator = {
  async evaluate({ result }) {
    const completed = result.outcome === "finished";
    const text = result.finalText.trim();
    const feedback = completed
      ? ""
      : [outcomeFeedback[result.outcome], result.error ? `Error: ${result.error}` : ""]
          .filter(Boolean)
          .join(" ");
    return {
      completed,
      ...(completed ? {} : { incomplete: "not-finished" as const }),
      summary: text.slice(0, 500) || `The attempt ended: ${result.outcome}.`,
      outputData: completed ? text.slice(0, outputLimit) : "",
      feedback,
      evidence: [
        {
          source: "finish-reason",
          passed: completed,
          detail: `outcome ${result.outcome}; steps ${result.stepFinishReasons.join(", ") || "none"}`,
        },
      ],
      usage: emptyUsage(),
    };
  },
};
