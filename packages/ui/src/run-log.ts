import { open, stat } from "node:fs/promises";
import {
  type AttemptResult,
  applyRunEvent,
  createRunState,
  type RunEvent,
  type RunEventOf,
  type RunState,
  runLogVersion,
  StoreError,
  UnsupportedLogVersionError,
} from "@taskledger/core";
import { clip, textLimits } from "./text-limits.js";
import type {
  AcceptanceMarkView,
  AttemptView,
  GateRunView,
  ProviderLimitView,
  ProviderWaitView,
} from "./view.js";

const chunkBytes = 1024 * 1024;
// The failing checks of a merge sent back shown on its attempt, each output clipped.
const maxGateChecksShown = 5;
// A line longer than this is no record this taskledger writes; it is skipped, not buffered.
const maxLineBytes = 64 * 1024 * 1024;

/** What one read of new bytes changed. */
export interface LogChange {
  /** Sub-tasks whose state or history changed. */
  subTasks: Set<string>;
  /** The plan itself changed (a plan, an edit, a replan): the graph is laid out again. */
  plan: boolean;
  /** Records read. */
  records: number;
}

/**
 * One run's JSON-lines log, read from where the last read stopped: the state is core's fold
 * (`applyRunEvent`, as `recoverRun` does it) and each sub-task's attempts are kept, bounded, for
 * the side panel. A torn last line waits for its newline.
 */
export class RunLog {
  readonly state: RunState;
  /** Attempts by sub-task, in the order they started. */
  readonly attempts = new Map<string, AttemptView[]>();
  /** A log that cannot be read any further (corrupted, a newer format). */
  error: string | undefined;
  /** When the run was first started (its run-started record). */
  startedAt: string | undefined;
  /** A session began after the last `run-finished` (a cancelled run resumed): its report is old. */
  resumedAfterReport = false;
  /** When each sub-task completed, for the timeline. */
  readonly completedAt = new Map<string, string>();
  /** The integration gate's check runs, for the timeline: the latest `textLimits.items`. */
  readonly gateRuns: GateRunView[] = [];
  /** The acceptance's verdicts, for the timeline (at most 6 a run: its rounds are bounded). */
  readonly acceptance: AcceptanceMarkView[] = [];
  /** A provider's refusals, for the timeline: the latest `textLimits.items`. */
  readonly providerWaits: ProviderWaitView[] = [];
  #offset = 0;
  #partial: Buffer[] = [];
  #partialBytes = 0;
  #skipping = false;
  #records = 0;
  #reading: Promise<LogChange> | undefined;

  constructor(
    readonly path: string,
    readonly runId: string,
  ) {
    this.state = createRunState(runId);
  }

  /** Reads what was appended since the last call; concurrent calls share one read. */
  readMore(): Promise<LogChange> {
    const previous = this.#reading ?? Promise.resolve(emptyChange());
    const next = previous.then(() => this.#read());
    this.#reading = next.finally(() => {
      if (this.#reading === next) this.#reading = undefined;
    });
    return next;
  }

  async #read(): Promise<LogChange> {
    const change = emptyChange();
    if (this.error) return change;
    let size: number;
    try {
      size = (await stat(this.path)).size;
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return change;
      throw cause;
    }
    if (size <= this.#offset) return change;
    const handle = await open(this.path, "r");
    try {
      const buffer = Buffer.alloc(chunkBytes);
      while (this.#offset < size && !this.error) {
        const { bytesRead } = await handle.read(
          buffer,
          0,
          Math.min(chunkBytes, size - this.#offset),
          this.#offset,
        );
        if (bytesRead === 0) break;
        this.#offset += bytesRead;
        this.#consume(buffer.subarray(0, bytesRead), change);
      }
    } finally {
      await handle.close();
    }
    return change;
  }

  #consume(bytes: Buffer, change: LogChange): void {
    let start = 0;
    for (let newline = bytes.indexOf(10, start); newline >= 0; newline = bytes.indexOf(10, start)) {
      const piece = bytes.subarray(start, newline);
      start = newline + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      const line =
        this.#partialBytes > 0 ? Buffer.concat([...this.#partial, piece]).toString("utf8") : piece;
      this.#partial = [];
      this.#partialBytes = 0;
      this.#apply(line.toString(), change);
      if (this.error) return;
    }
    const rest = bytes.subarray(start);
    if (rest.length === 0 || this.#skipping) return;
    if (this.#partialBytes + rest.length > maxLineBytes) {
      this.#partial = [];
      this.#partialBytes = 0;
      this.#skipping = true;
      return;
    }
    // Copied: the read buffer is reused for the next chunk.
    this.#partial.push(Buffer.from(rest));
    this.#partialBytes += rest.length;
  }

  #apply(line: string, change: LogChange): void {
    let record: RunEvent;
    try {
      record = JSON.parse(line) as RunEvent;
    } catch {
      this.error = new StoreError(`${this.path} line ${this.#records + 1} is corrupted`).message;
      return;
    }
    // The checks recoverRun makes, so a log this page shows is one resume would take.
    if (this.#records === 0 && record.type !== "run-started") {
      this.error = `The log of run "${this.runId}" does not begin with its run-started record.`;
      return;
    }
    const version = record.v ?? 1;
    if (typeof version !== "number" || version > runLogVersion) {
      this.error = new UnsupportedLogVersionError(this.runId, version, runLogVersion).message;
      return;
    }
    this.#records++;
    if (record.type === "run-started") this.startedAt ??= record.time;
    if (record.type === "run-resumed") this.resumedAfterReport = this.state.report !== undefined;
    if (record.type === "run-finished") this.resumedAfterReport = false;
    const planBefore = this.state.subTasks.size;
    applyRunEvent(this.state, record);
    change.records++;
    this.#remember(record, change);
    if (
      record.type === "plan-created" ||
      record.type === "plan-revised" ||
      (record.type === "plan-reviewed" && record.ledger !== undefined) ||
      this.state.subTasks.size !== planBefore
    )
      change.plan = true;
  }

  /** Keeps what the timeline shows of the run as a whole: the gate's runs, the acceptance. */
  #rememberRun(record: RunEvent): void {
    const at = Date.parse(record.time);
    if (record.type === "integration-checked") {
      this.gateRuns.push({
        start: at - record.durationMs,
        end: at,
        parts: record.parts.slice(0, textLimits.items).map((id) => clip(id, textLimits.short)),
        final: record.final === true,
        passed: record.passed,
        failed: record.results
          .filter((r) => !r.passed)
          .slice(0, textLimits.items)
          .map((r) => clip(r.argv.join(" "), textLimits.short)),
      });
      if (this.gateRuns.length > textLimits.items) this.gateRuns.shift();
    } else if (record.type === "acceptance-judged") {
      this.acceptance.push({
        at,
        round: record.round,
        verdict: record.verdict,
        missing: record.missing.slice(0, 10).map((m) => clip(m.what, textLimits.short)),
        reason: record.reason === undefined ? undefined : clip(record.reason, textLimits.short),
      });
      if (this.acceptance.length > textLimits.items) this.acceptance.shift();
    } else if (record.type === "provider-limited") {
      this.providerWaits.push({
        key: clip(record.key, textLimits.short),
        at,
        subTaskId:
          record.subTaskId === undefined ? undefined : clip(record.subTaskId, textLimits.short),
        attempt: record.attempt,
        ...limitView(record),
      });
      if (this.providerWaits.length > textLimits.items) this.providerWaits.shift();
    }
  }

  /** Keeps what the side panel shows about each attempt; the fold keeps only the last ones. */
  #remember(record: RunEvent, change: LogChange): void {
    this.#rememberRun(record);
    // A provider's limit met by the manager's own call names no sub-task.
    if (!("subTaskId" in record) || record.subTaskId === undefined) return;
    const id = record.subTaskId;
    change.subTasks.add(id);
    const attempt = "attempt" in record ? record.attempt : undefined;
    const list = this.attempts.get(id) ?? [];
    const find = () => list.findLast((a) => a.attempt === attempt);
    switch (record.type) {
      case "sub-task-started":
        if (!this.attempts.has(id)) this.attempts.set(id, list);
        list.push(newAttempt(record.attempt, record.time, record.agentModel));
        break;
      case "attempt-finished": {
        const a = find();
        if (a) fillResult(a, record.result);
        if (a) a.finishedAt = record.time;
        if (a && record.commit) a.commit = record.commit;
        break;
      }
      case "sub-task-evaluated": {
        const a = find();
        if (a)
          a.verdict = {
            completed: record.entry.completed,
            summary: clip(record.entry.summary),
            feedback: clip(record.entry.feedback),
            incomplete: record.entry.incomplete,
            evidence: record.entry.evidence.slice(0, textLimits.items).map((e) => ({
              source: clip(e.source, textLimits.short),
              passed: e.passed,
              detail: clip(e.detail),
            })),
          };
        break;
      }
      case "provider-limited": {
        // Logged before its attempt's result: the attempt it ended is the one running.
        const a = find();
        if (a) a.limit = limitView(record);
        break;
      }
      case "sub-task-completed":
        this.completedAt.set(id, record.time);
        break;
      case "sub-task-integration-failed": {
        // Its work passed its own checks and broke the gate's once merged: incomplete after all.
        const a = find();
        const failing = this.state.integration.failures.at(-1)?.results ?? [];
        if (a) {
          a.integration = {
            with: record.with.slice(0, textLimits.items).map((w) => clip(w, textLimits.short)),
            checks: failing.slice(0, maxGateChecksShown).map((r) => ({
              command: clip(r.argv.join(" "), textLimits.short),
              detail: clip(r.detail, textLimits.tool),
            })),
          };
          if (a.verdict)
            a.verdict = { ...a.verdict, completed: false, incomplete: record.entry.incomplete };
        }
        break;
      }
      case "sub-task-retrying": {
        // The attempt retried is the one the fold now builds on; a round's candidate never is:
        // the retry after a round starts from the round's start.
        const s = this.state.subTasks.get(id);
        const retried = s?.previous?.attempt;
        const candidate = s?.round?.members.some((m) => m.attempt === retried) === true;
        const a = candidate ? undefined : list.findLast((x) => x.attempt === retried);
        if (a) a.retryFeedback = clip(record.feedback);
        break;
      }
      default:
        break;
    }
  }
}

/** A `provider-limited` record as the page shows it, its texts clipped. */
function limitView(record: RunEventOf<"provider-limited">): ProviderLimitView {
  const until = record.until === undefined ? Number.NaN : Date.parse(record.until);
  return {
    provider: clip(record.provider, textLimits.short),
    kind: record.limit.kind,
    statusCode: record.limit.statusCode,
    retryAfterMs: record.limit.retryAfterMs,
    message: clip(record.limit.message, textLimits.short * 5),
    until: Number.isFinite(until) ? until : undefined,
    reason: record.reason === undefined ? undefined : clip(record.reason, textLimits.short * 5),
  };
}

function emptyChange(): LogChange {
  return { subTasks: new Set(), plan: false, records: 0 };
}

function newAttempt(attempt: number, time: string, agentModel: string | undefined): AttemptView {
  return {
    attempt,
    startedAt: time,
    agentModel,
    outcome: undefined,
    error: undefined,
    durationMs: undefined,
    tokens: undefined,
    finalText: "",
    toolCalls: [],
    toolCallsOmitted: 0,
    filesChanged: [],
    verdict: undefined,
    retryFeedback: undefined,
  };
}

function fillResult(a: AttemptView, result: AttemptResult): void {
  a.outcome = result.outcome;
  a.error = result.error === undefined ? undefined : clip(result.error);
  a.durationMs = result.durationMs;
  a.tokens = {
    input: result.usage.inputTokens,
    output: result.usage.outputTokens,
    ...(result.usage.costUsd === undefined ? {} : { costUsd: result.usage.costUsd }),
  };
  a.finalText = clip(result.finalText);
  const calls = result.toolCalls ?? [];
  a.toolCalls = calls.slice(-textLimits.items).map((call) => ({
    tool: clip(call.tool, textLimits.short),
    status: clip(call.status, textLimits.short),
    input: clip(call.input, textLimits.tool),
    output: clip(call.output, textLimits.tool),
  }));
  a.toolCallsOmitted = Math.max(0, calls.length - textLimits.items);
  a.filesChanged = (result.filesChanged ?? [])
    .slice(0, textLimits.items)
    .map((f) => clip(f, textLimits.short));
  if (result.outsideCwd) {
    a.outsideCwd = {
      paths: result.outsideCwd.paths
        .slice(0, textLimits.items)
        .map((f) => clip(f, textLimits.short)),
      count: result.outsideCwd.count,
      ...(result.outsideCwd.shared ? { shared: true as const } : {}),
    };
  }
  if (result.refusals?.length) {
    a.refusals = result.refusals
      .slice(0, textLimits.items)
      .map((r) => ({ kind: r.kind, target: clip(r.target, textLimits.short) }));
  }
  const waited = result.details?.waitedForWorkerMs;
  if (typeof waited === "number" && Number.isFinite(waited)) a.waitedForWorkerMs = waited;
  // Diffs arrive with isolation (another change); shown when the result carries one.
  const diff = (result as { diff?: unknown }).diff;
  if (typeof diff === "string") a.diff = clip(diff, textLimits.diff);
}
