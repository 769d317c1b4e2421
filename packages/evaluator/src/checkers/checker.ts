import {
  AbortedError,
  type AttemptProcess,
  type AttemptResult,
  clipMiddle,
  type Evidence,
  isAbortError,
  type Sandbox,
  type SubTask,
} from "@taskledger/core";
import { throwIfAborted } from "../abort.js";

/** What a checker sees: the attempt, the sub-task it was for and where it ran. */
export interface CheckContext {
  request: string;
  subTask: SubTask;
  attempt: number;
  result: AttemptResult;
  cwd: string;
  abortSignal: AbortSignal;
  /** Keeps a process a check starts from outliving the host (see `Executor.guard`). */
  guardProcess?: (process: AttemptProcess) => () => void;
  /** The OS sandbox a check's command runs inside, as the attempts do. */
  sandbox?: Sandbox;
}

/** A checker's verdict (seed 004): complete or not, and feedback that says what to do next. */
export interface CheckResult {
  complete: boolean;
  /** When incomplete: what the next attempt must do. When complete: an optional note. */
  feedback?: string;
  /** The facts behind the verdict (exit code, output tail, …), kept as evidence. */
  detail?: string;
}

/** Anything with `check` is a checker; `name` labels its evidence (`command: npm test`). */
export interface Checker {
  readonly name?: string;
  check(context: CheckContext): CheckResult | Promise<CheckResult>;
}

/** A checker's result together with the name it is reported under. */
export interface NamedCheckResult extends CheckResult {
  name: string;
}

const sourceLimit = 200;
const detailLimit = 4000;

export function checkerName(checker: Checker): string {
  return clipMiddle(checker.name?.trim() || "custom-checker", sourceLimit);
}

/**
 * Runs one checker. A checker that throws is an incomplete result saying so, never a crash of the
 * evaluation; an abort is the exception and propagates.
 */
export async function runChecker(
  checker: Checker,
  context: CheckContext,
): Promise<NamedCheckResult> {
  const name = checkerName(checker);
  throwIfAborted(context.abortSignal);
  try {
    const result = await checker.check(context);
    return { ...result, name };
  } catch (error) {
    if (context.abortSignal.aborted || isAbortError(error)) {
      throw AbortedError.isInstance(error) ? error : new AbortedError(undefined, { cause: error });
    }
    const message = error instanceof Error ? error.message : String(error);
    return {
      name,
      complete: false,
      feedback: `The check "${name}" could not run: ${clipMiddle(message, 500)}`,
      detail: `threw: ${clipMiddle(message, 1000)}`,
    };
  }
}

/** The Progress Ledger evidence item for a checker's result. */
export function toEvidence(result: NamedCheckResult): Evidence {
  const detail =
    result.detail?.trim() || result.feedback?.trim() || (result.complete ? "passed" : "failed");
  return { source: result.name, passed: result.complete, detail: clipMiddle(detail, detailLimit) };
}
