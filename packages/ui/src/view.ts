// What the server sends the page: plain JSON, bounded in size, shared by both sides (no imports,
// so the browser bundle type-checks without Node's types).

export interface TokensView {
  input: number;
  output: number;
  /** US dollars, once the run records prices (absent until then: the page shows a blank). */
  costUsd?: number;
}

/** Where a run stands: a report's status, or what its log and its lock say while it has none. */
export type RunStatusView =
  | "planning"
  | "awaiting-review"
  | "running"
  | "stopped"
  | "completed"
  | "partial"
  | "failed"
  | "cancelled";

export interface RunSummaryView {
  runId: string;
  /** Clipped to a line. */
  request: string;
  status: RunStatusView;
  startedAt: string | undefined;
  durationMs: number;
  done: number;
  total: number;
  tokens: TokensView;
  /** A log that could not be read: the reason. */
  error?: string;
}

export interface RunListView {
  runs: RunSummaryView[];
  /** The run `taskledger run --ui` is running, when this page serves one. */
  live: string | undefined;
  /** Runs left out past the list's bound, the oldest. */
  omitted: number;
}

export interface NodeView {
  id: string;
  title: string;
  status: string;
  dependsOn: string[];
  attempts: number;
  tokens: TokensView;
  /** While it runs under `run --ui`: what its agent is doing now (the latest tool call or text). */
  activity: string;
}

/** A plan or replan waiting for an answer on the page. */
export interface ReviewView {
  id: string;
  kind: "plan" | "replan";
  /** The ledger as JSON, for the page to show and edit. */
  ledger: unknown;
  replaced: string[];
  reason: string | undefined;
}

export interface RunView {
  summary: RunSummaryView;
  /** The full request, clipped to a bound. */
  request: string;
  models: { manager: string | undefined; agent: string | undefined };
  nodes: NodeView[];
  /** The facts the plan rests on, each clipped, as `kind: text`. */
  facts: { kind: string; text: string }[];
  /** The run can be cancelled and reviewed from this page (it is `run --ui`'s own). */
  live: boolean;
  review: ReviewView | undefined;
  failure: string | undefined;
}

export interface ToolCallView {
  tool: string;
  status: string;
  input: string;
  output: string;
}

export interface EvidenceView {
  source: string;
  passed: boolean;
  detail: string;
}

export interface AttemptView {
  attempt: number;
  startedAt: string | undefined;
  agentModel: string | undefined;
  outcome: string | undefined;
  error: string | undefined;
  durationMs: number | undefined;
  tokens: TokensView | undefined;
  finalText: string;
  toolCalls: ToolCallView[];
  /** Tool calls left out past the bound. */
  toolCallsOmitted: number;
  filesChanged: string[];
  /** With worktrees: what it changed outside the run's directory, left out (never applied). */
  outsideCwd?: { paths: string[]; count: number; shared?: true };
  /** What the OS sandbox refused it: a path written or read, a host contacted. */
  refusals?: { kind: string; target: string }[];
  /** The attempt's diff, once runs record one (isolation); absent until then. */
  diff?: string;
  /** With worktrees: the attempt's commit; its diff is at `/api/runs/<run>/commits/<commit>/diff`. */
  commit?: string;
  verdict:
    | {
        completed: boolean;
        summary: string;
        feedback: string;
        incomplete: string | undefined;
        evidence: EvidenceView[];
      }
    | undefined;
  /** The feedback the retry after this attempt was given. */
  retryFeedback: string | undefined;
  /** When its result was logged. */
  finishedAt?: string;
  /** How long it waited in the queue for a worker (attempts sent to workers). */
  waitedForWorkerMs?: number;
  /**
   * Its work passed its own checks but, merged with the run's branch, broke the integration gate's:
   * the completed work it met there and each failing command with the end of its output.
   */
  integration?: { with: string[]; checks: { command: string; detail: string }[] };
  /** It ended `rate-limited`: its provider refused work (no try of the agent's, not judged). */
  limit?: ProviderLimitView;
}

/** A model provider's refusal: what it said, and the pause it caused or why waiting cannot help. */
export interface ProviderLimitView {
  provider: string;
  /** `rate-limit`, `overloaded` or `quota`. */
  kind: string;
  statusCode: number | undefined;
  retryAfterMs: number | undefined;
  /** What the provider said, clipped. */
  message: string;
  /** Starts toward it waited until then (ms since epoch); undefined when waiting could not help. */
  until: number | undefined;
  /** Why waiting could not help (a quota, a wait past the time budget), clipped. */
  reason: string | undefined;
}

export interface SubTaskDetailView {
  id: string;
  title: string;
  status: string;
  reason: string | null;
  description: string;
  successCriteria: string[];
  checks: string[];
  dependsOn: string[];
  attempts: AttemptView[];
  tokens: TokensView;
  /** What dependents were given: the output of the attempt it completed with. */
  outputData: string;
  replacedBy: string[] | null;
  /** While it runs under `run --ui`: what its agent is doing now. */
  activity: string;
  /** Its rounds of parallel candidates, once chosen: which won, and why the others lost. */
  candidates: CandidateRoundView[];
}

export interface CandidateRoundView {
  round: number;
  reason: string;
  /** The attempt merged; null when none was complete or the judge chose none. */
  winner: number | null;
  by: string;
  why: string;
  candidates: {
    attempt: number;
    agentModel: string | undefined;
    /** Where its commit is kept. */
    ref: string | undefined;
    completed: boolean;
    lost: string | undefined;
    tokens: TokensView;
  }[];
}

/** One sub-task's row on the timeline: its attempts as bars on the run's time axis. */
export interface TimelineRowView {
  id: string;
  title: string;
  status: string;
  dependsOn: string[];
  /** When its last dependency completed (ms since epoch); before that it waited for them. */
  readyAt: number | undefined;
  attempts: {
    attempt: number;
    /** ms since epoch */
    start: number;
    /** Absent while it runs. */
    end: number | undefined;
    outcome: string | undefined;
    /** The evaluator's verdict, once given. */
    completed: boolean | undefined;
    agentModel: string | undefined;
    waitedForWorkerMs: number | undefined;
  }[];
}

/** One run of the integration gate's checks on a merged result. */
export interface GateRunView {
  /** ms since epoch */
  start: number;
  end: number;
  /** The sub-tasks whose work it checked on top of the run's branch; none for the final result. */
  parts: string[];
  final: boolean;
  passed: boolean;
  /** The commands that failed. */
  failed: string[];
}

/** One verdict of the acceptance judge on the request as a whole. */
export interface AcceptanceMarkView {
  /** ms since epoch */
  at: number;
  round: number;
  verdict: string;
  /** What it found missing, each clipped. */
  missing: string[];
  reason: string | undefined;
}

/** One `provider-limited` record on the timeline: a pause of the starts toward `key`, or a refusal for good. */
export interface ProviderWaitView extends ProviderLimitView {
  /** The governor's key: the agent model, `agent` for the executor's own, the manager's model. */
  key: string;
  /** When it was met (ms since epoch). */
  at: number;
  /** The sub-task whose attempt met it; undefined for the manager's own call. */
  subTaskId: string | undefined;
  attempt: number | undefined;
}

/**
 * Where a run's time went: a row per sub-task on one time axis from its start to `end`, then a
 * row of the integration gate's runs and one of the acceptance's verdicts when the run had any.
 */
export interface TimelineView {
  /** ms since epoch */
  start: number;
  end: number;
  rows: TimelineRowView[];
  /** The gate's check runs, the latest at most 100 (absent from servers before the gate). */
  gate?: GateRunView[];
  acceptance?: AcceptanceMarkView[];
  /** A provider's refusals, the latest at most 100 (absent when none, and from servers before them). */
  waits?: ProviderWaitView[];
}

/** One message on the run's event stream. */
export type StreamMessage =
  | { type: "snapshot"; run: RunView }
  | { type: "update"; summary: RunSummaryView; nodes: NodeView[]; review: ReviewView | undefined };
