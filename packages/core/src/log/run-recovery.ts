import { StoreError, UnsupportedLogVersionError } from "../errors/errors.js";
import { applyRunEvent } from "./apply-run-event.js";
import { type RunEvent, runLogVersion } from "./run-events.js";
import { createRunState, type RunState } from "./run-state.js";

/**
 * Folds a run's records into its state, as `Manager.resume` continues it; the log is the only
 * source of truth. A log of a newer format is an `UnsupportedLogVersionError`; one that does not
 * begin with `run-started` is a `StoreError`.
 */
export function recoverRun(records: readonly RunEvent[], runId?: string): RunState {
  const id = runId ?? records[0]?.runId ?? "";
  const first = records[0];
  if (first && first.type !== "run-started") {
    throw new StoreError(
      `The log of run "${id}" does not begin with its run-started record (it begins with ` +
        `"${String(first.type)}"): it is not a whole log, so it cannot be resumed.`,
    );
  }
  const state = createRunState(id);
  for (const record of records) {
    const version = record.v ?? 1;
    if (typeof version !== "number" || !Number.isInteger(version) || version > runLogVersion)
      throw new UnsupportedLogVersionError(id, version, runLogVersion);
    applyRunEvent(state, record);
  }
  return state;
}
