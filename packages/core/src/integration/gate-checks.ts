import { projectCommandChecks } from "../attempt/project-baseline.js";
import type { Check } from "../ledger/sub-task.js";
import type { RunState } from "../log/run-state.js";
import type { RunContext } from "../run/run-context.js";

// Checks one gate run may hold: the project's few commands, the run's, and each sub-task's.
const maxGateChecks = 40;

/**
 * What the integration gate runs on a merged result: the project's test and typecheck commands,
 * the run's `checks`, and the command checks of every completed sub-task and of the parts being
 * merged, each once. A command that already failed before any change (the baseline) is no gate.
 */
export function gateChecks(ctx: RunContext, parts: readonly string[] = []): Check[] {
  const { settings, state } = ctx;
  const key = (argv: readonly string[]) =>
    checkKey({ type: "command", argv: [...argv], timeoutMs: null });
  const failing = new Set(
    (state.baseline ?? []).filter((run) => !run.passed).map((run) => key(run.argv)),
  );
  const seen = new Set<string>();
  const checks: Check[] = [];
  const add = (check: Check) => {
    if (check.type !== "command") return;
    const k = checkKey(check);
    if (seen.has(k) || failing.has(k)) return;
    seen.add(k);
    checks.push(check);
  };
  for (const check of projectCommandChecks(ctx)) add(check);
  for (const check of settings.checks ?? []) add(check);
  for (const s of landedOrLanding(state, parts)) for (const check of s.subTask.checks) add(check);
  return checks.slice(0, maxGateChecks);
}

/** A check's identity: a command by its argv. */
export function checkKey(check: Check): string {
  return check.type === "command" ? check.argv.join("\0") : JSON.stringify(check);
}

function landedOrLanding(state: RunState, parts: readonly string[]) {
  const landing = new Set(parts);
  return [...state.subTasks.values()].filter(
    (s) => s.status === "completed" || landing.has(s.subTask.id),
  );
}
