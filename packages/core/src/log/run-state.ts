import { buildDependencyContext } from "../ledger/dependency-context.js";
import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { SubTask } from "../ledger/sub-task.js";
import type { Fact, TaskLedger } from "../ledger/task-ledger.js";
import type { AttemptProcess, AttemptResult } from "../ports/executor.js";
import type { ProjectDigest } from "../ports/project-source.js";
import type { SandboxRefusal } from "../ports/sandbox.js";
import type {
  OutsideChanges,
  SlotPreparation,
  WorkspaceOutcome,
  WorkspaceRecord,
} from "../ports/workspace.js";
import type { RunReport, SubTaskFailure, SubTaskStatus } from "../report/run-report.js";
import type { RunSettings } from "../settings/run-settings.js";
import { emptyUsage, type Usage } from "../usage/usage.js";
import type {
  AcceptanceGap,
  BaselineResult,
  BudgetExhaustion,
  CandidateOutcome,
  CandidateRoundReason,
  GateCheckResult,
  SubTaskMerge,
} from "./run-events.js";

/** What one attempt spent: the agent's session and the evaluation of it. */
/** Refusals kept per sub-task: enough to tell what an agent tried, never a growing list. */
export const maxKeptRefusals = 50;

export interface AttemptUsage {
  attempt: number;
  agent: Usage;
  evaluation: Usage;
}

/** One parallel candidate of a round, as its records tell it. */
export interface CandidateMember {
  attempt: number;
  agentModel?: string;
  /** Running, or cut short (`ended`: cancelled) by a stop: a resumed round runs it again. */
  inFlight?: { processes: AttemptProcess[]; ended?: boolean };
  result?: AttemptResult;
  commit?: string;
  entry?: ProgressEntry;
}

/** What a round's choice recorded. */
export interface CandidateChoice {
  round: number;
  reason: CandidateRoundReason;
  winner?: number;
  by: "judge" | "rule" | "single" | "none";
  why: string;
  candidates: CandidateOutcome[];
  usage: Usage;
}

/** A round of parallel candidates of one sub-task. */
export interface CandidateRound {
  round: number;
  reason: CandidateRoundReason;
  from?: string;
  members: CandidateMember[];
  /** Candidates a stopped process never saw finish, each run again as attempt `by`. */
  replaced?: { attempt: number; agentModel?: string; by: number }[];
  chosen?: CandidateChoice;
  /** Winners whose work could not land and gave way to the next complete candidate. */
  gaveWay?: number[];
}

/** Where one sub-task of a run stands, as its records tell it. */
export interface SubTaskState {
  subTask: SubTask;
  status: SubTaskStatus;
  /** The highest attempt number started; numbers only grow, across restarts too. */
  attempts: number;
  /** The last evaluation, or the entry it completed with. */
  entry: ProgressEntry | undefined;
  reason: string | null;
  /** Why it failed, as a value, once it has. */
  failure?: SubTaskFailure | undefined;
  /** Dependencies not completed yet; the sub-task is ready at 0. */
  waitingOn: number;
  /** Attempts in the current step of the escalation ladder. */
  stepAttempts: number;
  /** Attempts a provider's limit ended (issue 49): not counted by the ladder or the report. */
  limited: number;
  /** The agent model of the current step, when it is an alternate one. */
  agentModel: string | undefined;
  alternatesUsed: number;
  /** Replans in this sub-task's lineage: a replacement inherits its predecessor's count plus one. */
  replans: number;
  replacedBy: string[] | null;
  /** The last evaluated attempt that was followed by another: the next prompt builds on it. */
  previous: { attempt: number; entry: ProgressEntry } | undefined;
  /** The feedback the last retry was announced with. */
  lastFeedback: string | undefined;
  /** An attempt that finished and awaits its evaluation (no `entry`) or the decision after it. */
  finished: { attempt: number; result: AttemptResult; entry?: ProgressEntry } | undefined;
  /** The attempt running now; in a recovered run, the one a stopped process never saw finish. */
  inFlight:
    | { attempt: number; processes: AttemptProcess[]; from?: string; ended?: boolean }
    | undefined;
  /** When the current attempt started (ISO time of its record). */
  startedAt: string | undefined;
  /** How long the last finished attempt took. */
  lastDurationMs: number | undefined;
  /** The agents' tokens over every attempt of this sub-task. */
  usage: Usage;
  /** Each attempt's agent usage and its evaluation's, in attempt order. */
  attemptUsage: AttemptUsage[];
  /** What the sandbox refused its attempts, bounded (`maxKeptRefusals`). */
  refusals: { attempt: number; kind: SandboxRefusal["kind"]; target: string }[];
  /** The agent's latest tool or text, from the live event stream only (never stored). */
  activity: string;
  /** With worktrees: the commit the next attempt continues from (its last attempt's work). */
  workFrom: string | undefined;
  /** With worktrees: its completed work, as merged into the run's branch. */
  merged: SubTaskMerge | undefined;
  /** The latest round of parallel candidates, running or chosen. */
  round: CandidateRound | undefined;
  /** Every round's choice, in order (at most one first round and one ladder round). */
  rounds: CandidateChoice[];
  /** The ladder's candidates rung is the current step: it gets no retries of its own. */
  onCandidatesRung: boolean;
  /**
   * Tokens of running attempts' finished steps (`attempt-step`), until the attempt finishes; one a
   * stopped process never saw finish is counted when it is run again or given up.
   */
  streamed?: { attempt: number; usage: Usage }[];
  /** Attempts that changed files outside the run's directory: left out, by attempt. */
  outsideCwd: AttemptOutsideCwd[];
}

/** What one attempt changed outside the run's directory (never merged or applied). */
export interface AttemptOutsideCwd extends OutsideChanges {
  attempt: number;
}

/** The member of the sub-task's running round that attempt `attempt` is, if any. */
export function candidateOf(s: SubTaskState, attempt: number): CandidateMember | undefined {
  if (!s.round || s.round.chosen) return undefined;
  return s.round.members.find((m) => m.attempt === attempt);
}

/** A run's whole state: built by `applyRunEvent`, record by record, live and on recovery alike. */
// Slots are a handful per run (one per attempt at a time, again when lockfiles change): a bound.
export const maxSlotPreparations = 50;

export interface ExploreState {
  attempts: number;
  /** Set once an exploration ended; a run that crashed before explores again. */
  finished?: {
    outcome: AttemptResult["outcome"];
    findings: string;
    refused: string[];
    wrote: string[];
  };
}

/** Where a gate verdict is kept: the tree checked and the commands it was checked with. */
export function verdictKey(
  tree: string,
  checks: readonly ({ argv: readonly string[] } | object)[],
): string {
  const argvs = checks.map((c) =>
    "argv" in c ? (c.argv as readonly string[]).join(" ") : JSON.stringify(c),
  );
  return `${tree}\n${argvs.join("\n")}`;
}

/** What the integration gate did in a run, as its records tell it. */
export interface IntegrationState {
  /** Verdicts by tree and checks (`verdictKey`): not checked again (bounded by the run's merges). */
  verdicts: Map<string, { passed: boolean; results: GateCheckResult[] }>;
  /** Check runs so far. */
  runs: number;
  /** Sub-tasks sent back because their merge broke the checks, in order (the last 20). */
  failures: { subTaskId: string; attempt: number; with: string[]; results: GateCheckResult[] }[];
  /** The last check run's result, for the sub-task sent back after it. */
  last: { parts: string[]; passed: boolean; results: GateCheckResult[] } | undefined;
  /** The final tip's check, once run. */
  final: { passed: boolean; results: GateCheckResult[]; commit?: string } | undefined;
}

/** One acceptance verdict, and whether its missing work was planned. */
export interface AcceptanceRound {
  round: number;
  verdict: "satisfied" | "unsatisfied" | "unavailable";
  missing: AcceptanceGap[];
  reason?: string;
  usage: Usage;
  /** Sub-tasks completed when it was judged: a later completion makes it stale. */
  completedAt: number;
  /** The sub-tasks planned for its missing work. */
  continued?: string[];
}

export interface RunState {
  runId: string;
  request: string;
  cwd: string | undefined;
  /** Absent in logs written before settings were recorded. */
  settings: RunSettings | undefined;
  /** A plan the host gave at start instead of a planning call. */
  hostPlan: TaskLedger | undefined;
  planned: boolean;
  /** What the planner was told of the project (absent without a project source, and in older logs). */
  project: ProjectDigest | undefined;
  /** The facts the plan rests on, the replans' added. */
  facts: Fact[];
  /** The project's commands run before any change (absent until run, and in older logs). */
  baseline: BaselineResult[] | undefined;
  /** The read-only look at the project before planning (`explore`), once started. */
  explore: ExploreState | undefined;
  /** In the order sub-tasks first appeared (the report's order), replaced ones included. */
  subTasks: Map<string, SubTaskState>;
  dependents: Map<string, string[]>;
  /** Sub-tasks in the order they completed, for newest-first context passing. */
  completionOrder: Map<string, number>;
  usage: { manager: Usage; agents: Usage };
  budgetStop: BudgetExhaustion | undefined;
  /** The plan waits for the host's review. */
  planReviewPending: boolean;
  /** Why the plan was rejected in review, if it was. */
  planRejected: string | undefined;
  /** A replan the model proposed that waits for the host's review: a restart asks about it again. */
  replanReview: { ledger: TaskLedger; replaced: string[] } | undefined;
  /** Replans applied in the run. */
  replans: number;
  nextSeq: number;
  /** Wall time of the run's sessions before the current one. */
  elapsedMs: number;
  sessionStartedAt: number | undefined;
  lastRecordAt: number | undefined;
  /** Where attempts work, as logged at the start (absent in older logs: shared). */
  workspace: WorkspaceRecord | undefined;
  /** With worktrees: the run branch's tip as the log tells it (its base, then each merge). */
  tip: string | undefined;
  /** The tip's tree, when its merge said it (the gate's verdicts are kept by tree). */
  tipTree: string | undefined;
  /** What became of the run's branch at the end. */
  workspaceOutcome: WorkspaceOutcome | undefined;
  /** Slot preparations, the first `maxSlotPreparations` of the run. */
  slots: SlotPreparation[];
  /** The integration gate's checks and verdicts. */
  integration: IntegrationState;
  /** The request judged as a whole, round by round. */
  acceptance: AcceptanceRound[];
  /** Each model provider (a governor key) that refused work: its waits, kept across sessions. */
  providers: Map<string, ProviderWaits>;
  /** A provider refused for good with no way on: the run starts no more work. Its one line. */
  providerStop: string | undefined;
  /** The last `run-finished` report; a `cancelled` one can be taken up again. */
  report: RunReport | undefined;
  failure: { code: string; message: string } | undefined;
}

/** What one provider's limits cost a run (a `provider-limited` fold). */
export interface ProviderWaits {
  provider: string;
  /** Pauses it caused (a limit met while it was already paused extends, it is no new one). */
  waits: number;
  /** Time starts toward it waited, overlapping pauses counted once. */
  waitedMs: number;
  /** Attempts and manager calls its refusals ended. */
  rejected: number;
  /** Starts wait until then (ms since the epoch); a resumed run keeps waiting. */
  until: number | undefined;
  /** What it said when waiting could not help (a quota, a wait past the run's time). */
  exhausted?: string;
}

export function createRunState(runId: string): RunState {
  return {
    runId,
    request: "",
    cwd: undefined,
    settings: undefined,
    hostPlan: undefined,
    planned: false,
    project: undefined,
    facts: [],
    explore: undefined,
    baseline: undefined,
    subTasks: new Map(),
    dependents: new Map(),
    completionOrder: new Map(),
    usage: { manager: emptyUsage(), agents: emptyUsage() },
    budgetStop: undefined,
    planReviewPending: false,
    planRejected: undefined,
    replanReview: undefined,
    replans: 0,
    nextSeq: 0,
    elapsedMs: 0,
    sessionStartedAt: undefined,
    lastRecordAt: undefined,
    workspace: undefined,
    tip: undefined,
    tipTree: undefined,
    workspaceOutcome: undefined,
    slots: [],
    integration: { verdicts: new Map(), runs: 0, failures: [], last: undefined, final: undefined },
    acceptance: [],
    providers: new Map(),
    providerStop: undefined,
    report: undefined,
    failure: undefined,
  };
}

/** True when the run ended for good: only a cancelled run can be resumed. */
export function isFinal(state: RunState): boolean {
  return state.report !== undefined && state.report.status !== "cancelled";
}

/** Wall time of every session so far, the open one included. */
export function elapsedMs(state: RunState): number {
  const open =
    state.sessionStartedAt !== undefined && state.lastRecordAt !== undefined
      ? state.lastRecordAt - state.sessionStartedAt
      : 0;
  return state.elapsedMs + open;
}

/** The plan as it stands: every sub-task a replan has not taken out. */
export function currentLedger(state: RunState): TaskLedger {
  return {
    facts: state.facts,
    subTasks: [...state.subTasks.values()]
      .filter((s) => s.status !== "replaced")
      .map((s) => s.subTask),
  };
}

/** Every sub-task downstream of `id` that has not started, in breadth-first order. */
export function pendingDownstream(state: RunState, id: string): string[] {
  const found: string[] = [];
  const seen = new Set([id]);
  const frontier = [id];
  for (let next = frontier.shift(); next !== undefined; next = frontier.shift()) {
    for (const dependent of state.dependents.get(next) ?? []) {
      if (seen.has(dependent) || state.subTasks.get(dependent)?.status !== "pending") continue;
      seen.add(dependent);
      found.push(dependent);
      frontier.push(dependent);
    }
  }
  return found;
}

/** The outputs of `subTask`'s ancestors, within `budgetTokens`. */
export function dependencyContextFor(
  state: RunState,
  subTask: SubTask,
  budgetTokens: number,
): string {
  // Views over the state, so one prompt costs its ancestors, not the whole run.
  const byId = { get: (id: string) => state.subTasks.get(id)?.subTask };
  const outputs = {
    get: (id: string) => {
      const order = state.completionOrder.get(id);
      const done = state.subTasks.get(id);
      if (order === undefined || !done) return undefined;
      const files = done.merged?.filesChanged;
      return {
        subTask: done.subTask,
        outputData: done.entry?.outputData ?? "",
        order,
        ...(files ? { filesChanged: files } : {}),
      };
    },
  };
  return buildDependencyContext(subTask, byId, outputs, budgetTokens).text;
}
