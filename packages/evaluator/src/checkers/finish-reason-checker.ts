import type { AttemptResult, ToolCallRecord } from "@taskledger/core";
import { clipStart, oneLine } from "@taskledger/core";
import type { Checker, CheckResult } from "./checker.js";

// opencode's wording when a tool call is refused: "rejected permission" (asked and refused) and
// "prevents you from using this specific tool call" (a deny rule).
const permissionRejected =
  /rejected permission|prevents you from using this specific tool call|permission denied for/i;

/** The tool calls that were refused permission. */
export function rejectedToolCalls(result: AttemptResult): ToolCallRecord[] {
  return result.toolCalls.filter(
    (call) => call.status !== "completed" && permissionRejected.test(call.output),
  );
}

/** True when the executor says a permission was refused, or a tool call shows one. */
export function hadRejectedPermission(result: AttemptResult): boolean {
  return result.details?.permissionRejected === true || rejectedToolCalls(result).length > 0;
}

/**
 * Incomplete when the attempt did not end on its own: `truncated`, `error`, `timeout`,
 * `cancelled`, or a tool call refused permission. Its feedback names where the attempt stopped.
 */
export function finishReasonChecker(): Checker {
  return {
    name: "finish-reason",
    check: ({ result }) => checkFinish(result),
  };
}

function checkFinish(result: AttemptResult): CheckResult {
  const steps = result.stepFinishReasons;
  const detail = [
    `outcome ${result.outcome}`,
    `${steps.length} step(s)${steps.length ? `, last: ${steps.slice(-3).join(", ")}` : ""}`,
    result.error ? `error: ${oneLine(result.error, 500)}` : "",
  ]
    .filter(Boolean)
    .join("; ");
  const where = lastAction(result);
  switch (result.outcome) {
    case "truncated":
      return {
        complete: false,
        detail,
        feedback:
          `The attempt was cut off before it finished (its output ran out)${where}. Check what ` +
          "is already done, then finish the rest in smaller steps: write large files in parts, " +
          "keep messages short.",
      };
    case "timeout":
      return {
        complete: false,
        detail,
        feedback:
          `The attempt ran out of time after ${Math.round(result.durationMs / 1000)} s${where}. ` +
          "Do not redo finished work; finish what remains and avoid long-running commands.",
      };
    case "error":
      return {
        complete: false,
        detail,
        feedback:
          `The attempt ended with an error${result.error ? `: ${oneLine(result.error, 300)}` : ""}` +
          `${where}. Avoid the step that failed or work around it.`,
      };
    case "cancelled":
      return { complete: false, detail, feedback: `The attempt was cancelled${where}.` };
    // Judged only as a round's candidate (the runner waits and runs a sub-task again instead).
    case "rate-limited":
      return {
        complete: false,
        detail,
        feedback: `The model provider refused the attempt's requests (a rate limit)${where}; nothing it did was at fault. Check what is already done and finish the rest.`,
      };
    case "finished":
      break;
  }
  if (hadRejectedPermission(result)) {
    const rejected = rejectedToolCalls(result);
    const calls =
      rejected
        .slice(0, 3)
        .map((call) => `${call.tool} ${oneLine(call.input, 120)}`)
        .join("; ") || "a tool call";
    return {
      complete: false,
      detail: `${detail}; permission refused: ${calls}`,
      feedback:
        `Permission was refused for: ${calls}. That action is not allowed here; reach the goal ` +
        "another way (for example, stay inside the working directory).",
    };
  }
  return { complete: true, detail };
}

/** ", after it last ran edit src/a.ts" — tells the next attempt where the previous one stopped. */
function lastAction(result: AttemptResult): string {
  const last = result.toolCalls.at(-1);
  const parts: string[] = [];
  if (last) parts.push(`after it last ran ${last.tool} ${oneLine(last.input, 120)}`);
  if (result.filesChanged.length > 0) {
    const files = result.filesChanged.slice(-5).join(", ");
    parts.push(`having written ${clipStart(files, 300)}`);
  }
  return parts.length ? `, ${parts.join(", ")}` : "";
}
