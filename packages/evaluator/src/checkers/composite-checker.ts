import { clipMiddle } from "@taskledger/core";
import { type Checker, type CheckResult, type NamedCheckResult, runChecker } from "./checker.js";

export interface CompositeOptions {
  name?: string;
}

const feedbackLimit = 2000;

/**
 * Complete when every checker is (seed 004's `all_must_pass`). Runs them in order and stops at
 * the first that is incomplete, returning its feedback; when all pass, their notes are combined.
 */
export function allOf(checkers: readonly Checker[], options: CompositeOptions = {}): Checker {
  return {
    name: options.name ?? "all-of",
    async check(context): Promise<CheckResult> {
      const passed: NamedCheckResult[] = [];
      for (const checker of checkers) {
        const result = await runChecker(checker, context);
        if (!result.complete) {
          return {
            complete: false,
            ...(result.feedback ? { feedback: result.feedback } : {}),
            detail: clipMiddle(`${result.name} failed: ${describe(result)}`, feedbackLimit),
          };
        }
        passed.push(result);
      }
      return { complete: true, ...combine(passed) };
    },
  };
}

/**
 * Complete when any checker is. Runs them in order and stops at the first that is complete;
 * when none is, the feedback of every one is combined. No checkers at all is incomplete.
 */
export function anyOf(checkers: readonly Checker[], options: CompositeOptions = {}): Checker {
  return {
    name: options.name ?? "any-of",
    async check(context): Promise<CheckResult> {
      const failed: NamedCheckResult[] = [];
      for (const checker of checkers) {
        const result = await runChecker(checker, context);
        if (result.complete) {
          return {
            complete: true,
            ...(result.feedback ? { feedback: result.feedback } : {}),
            detail: clipMiddle(`${result.name} passed: ${describe(result)}`, feedbackLimit),
          };
        }
        failed.push(result);
      }
      if (failed.length === 0) return { complete: false, feedback: "any-of has no checkers." };
      const combined = combine(failed);
      return {
        complete: false,
        ...combined,
        feedback: `None of these passed; make one of them pass:\n${combined.feedback ?? ""}`,
      };
    },
  };
}

function describe(result: NamedCheckResult): string {
  return (
    result.detail?.trim() || result.feedback?.trim() || (result.complete ? "passed" : "failed")
  );
}

function combine(results: readonly NamedCheckResult[]): { feedback?: string; detail: string } {
  const notes = results
    .filter((result) => result.feedback?.trim())
    .map((result) => `- ${result.feedback?.trim()}`);
  const detail = results.map((result) => `${result.name}: ${describe(result)}`).join("\n");
  return {
    ...(notes.length ? { feedback: clipMiddle(notes.join("\n"), feedbackLimit) } : {}),
    detail: clipMiddle(detail || "no checkers", feedbackLimit),
  };
}
