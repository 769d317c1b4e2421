import { oneLine, type RunEventOf, type RunReport } from "@taskledger/core";
import type { Colors } from "picocolors/types.js";
import { formatDuration, terminalText } from "./terminal-text.js";

type Limited = RunEventOf<"provider-limited">;

// A lane limited this little after the shown pause's end is still the same pause (jitter).
const samePauseMs = 1000;

/** Which `provider-limited` events announced a pause, by governor key: the rest are repeats. */
export interface ShownLimits {
  /** The pause last shown for each key: its end (ms since the epoch) and the event that said it. */
  pauses: Map<string, { until: number; seq: number }>;
  /** What each key last said when waiting could not help, with the event that said it. */
  exhausted: Map<string, { reason: string; seq: number }>;
  /** The pause each sub-task waits out before it runs again, for the live view. */
  waiting: Map<string, Waiting>;
  /** The pause the manager's own call waits out. */
  manager: Waiting | undefined;
}

/** A pause someone waits out: whose provider, and its end (ms since the epoch). */
export interface Waiting {
  provider: string;
  until: number;
}

export function createShownLimits(): ShownLimits {
  return { pauses: new Map(), exhausted: new Map(), waiting: new Map(), manager: undefined };
}

/**
 * Notes `event` as the one to show unless it repeats what its key last showed: several lanes
 * limited within one pause (an `until` at most ~1 s past the shown one), or the same exhaustion.
 */
export function noteLimit(shown: ShownLimits, event: Limited): void {
  if (event.until === undefined) {
    const reason = reasonOf(event);
    if (shown.exhausted.get(event.key)?.reason !== reason)
      shown.exhausted.set(event.key, { reason, seq: event.seq });
    return;
  }
  const until = Date.parse(event.until);
  const waiting = { provider: terminalText(event.provider), until };
  if (event.subTaskId !== undefined) shown.waiting.set(event.subTaskId, waiting);
  else shown.manager = waiting;
  const before = shown.pauses.get(event.key);
  const repeats =
    before !== undefined &&
    Date.parse(event.time) < before.until &&
    until <= before.until + samePauseMs;
  if (!repeats) shown.pauses.set(event.key, { until, seq: event.seq });
}

/** The one line a pause (or a provider that refused for good) shows; none for a repeat. */
export function providerLimitLines(
  event: Limited,
  shown: ShownLimits,
  c: Colors,
  step: (id: string) => string,
): string[] {
  const who =
    event.subTaskId !== undefined
      ? `${step(event.subTaskId)}${event.attempt === undefined ? "" : `, attempt ${event.attempt}`}`
      : "the manager's call";
  const provider = terminalText(event.provider);
  if (event.until === undefined) {
    if (shown.exhausted.get(event.key)?.seq !== event.seq) return [];
    const next = event.stops
      ? "; the run starts no more work"
      : event.subTaskId !== undefined
        ? "; it moves to an alternate agent model"
        : "";
    return [
      `${c.red("✘")} ${terminalText(oneLine(reasonOf(event), 300))} ${c.dim(`(${who})`)}${next}`,
    ];
  }
  if (shown.pauses.get(event.key)?.seq !== event.seq) return [];
  const what = event.limit.kind === "overloaded" ? "is overloaded" : "is rate-limiting";
  const status = event.limit.statusCode === undefined ? "" : ` ${event.limit.statusCode}`;
  return [
    `${c.yellow("⏸")} ${provider} ${what}${c.dim(status)}: resuming in ${formatDuration(event.waitMs)} ${c.dim(`(${who})`)}`,
  ];
}

/** What a pause still open at `now` leaves to wait, for the live view; undefined once it ended. */
export function waitingText(waiting: Waiting | undefined, now: number): string | undefined {
  if (waiting === undefined || !(now < waiting.until)) return undefined;
  return `waiting for ${waiting.provider}, resumes in ${formatDuration(waiting.until - now)}`;
}

/** Each provider's waits under the summary table: `openai: 3 waits, 41.0s waited, 7 refused`. */
export function providerLines(providers: RunReport["providers"], c: Colors): string[] {
  if (!providers?.length) return [];
  return providers.map((p) => {
    // A provider met under two keys (the agents' model and the manager's) is named by its key.
    const shared = providers.filter((other) => other.provider === p.provider).length > 1;
    const name = terminalText(shared ? `${p.provider} (${p.key})` : p.provider);
    const line = `${name}: ${p.waits} wait${p.waits === 1 ? "" : "s"}, ${formatDuration(p.waitedMs)} waited, ${p.rejected} refused`;
    return p.exhausted === undefined
      ? line
      : c.yellow(`${line}; gave up: ${terminalText(oneLine(p.exhausted, 200))}`);
  });
}

/** Why waiting cannot help, one line naming the provider (core's own fallback when it has none). */
function reasonOf(event: Limited): string {
  return event.reason ?? `${event.provider} refused: ${event.limit.message}`;
}
