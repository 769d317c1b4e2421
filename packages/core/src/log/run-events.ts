import type { ProgressEntry } from "../ledger/progress-entry.js";
import type { TaskLedger } from "../ledger/task-ledger.js";
import type {
  AgentEvent,
  AttemptProcess,
  AttemptResult,
  ProviderLimit,
} from "../ports/executor.js";
import type { ProjectDigest } from "../ports/project-source.js";
import type { SandboxStatus } from "../ports/sandbox.js";
import type { SlotPreparation, WorkspaceOutcome, WorkspaceRecord } from "../ports/workspace.js";
import type { RunReport, SubTaskFailure } from "../report/run-report.js";
import type { RunSettings } from "../settings/run-settings.js";
import type { Usage } from "../usage/usage.js";

/**
 * The log format this taskledger writes, in every record's `v`. Format 1 (no `v`) is read too.
 * Raise it when a record changes shape, and keep a log of the old format as a test fixture.
 */
export const runLogVersion = 2;

interface EventBase {
  /** The log format version the record was written in (see `runLogVersion`); absent in format 1. */
  v?: number;
  runId: string;
  /** Position of the event in its run, from 0. */
  seq: number;
  /** ISO 8601 time the event was recorded. */
  time: string;
}

/** A W3C trace context of one session of a run (its root span), so a resumed run links to it. */
/** One of the project's commands, run before any change. */
export interface BaselineResult {
  argv: string[];
  passed: boolean;
  /** The exit code and the end of its output, bounded. */
  detail: string;
}

export interface TraceRef {
  traceId: string;
  spanId: string;
}

/** Why a budget stopped the run from starting new work. */
export interface BudgetExhaustion {
  kind: "tokens" | "time" | "cost";
  limit: number;
  used: number;
}

/** One of the integration gate's checks, run on a merged result. */
export interface GateCheckResult {
  /** The command (a `command` check's argv). */
  argv: string[];
  passed: boolean;
  /** The exit code and the end of its output, bounded. */
  detail: string;
}

/** One thing the acceptance found missing from the request as a whole. */
export interface AcceptanceGap {
  what: string;
  why: string;
}

/** A completed sub-task's work as merged into the run's branch. */
export interface SubTaskMerge {
  commit: string;
  merge: string;
  /** Paths the merge changed on the run's branch (at most `maxRecordedFiles`). */
  filesChanged: string[];
  /** The merge's tree, when the integration gate checked it (or what it landed with). */
  tree?: string;
}

/** Every step of a run, in the order it happens. Names are noun-verb, kebab-case. */
export type RunEvent = EventBase &
  (
    | {
        type: "run-started";
        request: string;
        cwd: string;
        /** The run's settings, so `resume` needs nothing else (absent in format-1 logs). */
        settings?: RunSettings;
        /** A plan the host gave instead of a planning call. */
        plan?: TaskLedger;
        /** Where attempts work: shared, or git worktrees from this base (absent in older logs). */
        workspace?: WorkspaceRecord;
        /** The host's trace of this session (see `RunOptions.trace`); absent when not traced. */
        trace?: TraceRef;
        /** Whether attempts run inside the OS sandbox, and why not; absent without one. */
        sandbox?: SandboxStatus;
      }
    /** A stopped or crashed run continues from its log; `interrupted` attempts are run again. */
    | {
        type: "run-resumed";
        interrupted: { subTaskId: string; attempt: number }[];
        reclaimed: number;
        /** The host's trace of this session; absent when not traced. */
        trace?: TraceRef;
      }
    | {
        type: "project-digested";
        /** What the planner and the replanner were given of the project. */
        digest: ProjectDigest;
        durationMs: number;
        cached: boolean;
      }
    | {
        type: "project-baseline";
        /** The project's commands run once before any change: only those that pass check sub-tasks. */
        results: BaselineResult[];
        durationMs: number;
      }
    | {
        type: "explore-started";
        /** 1, then 2 when a resumed run explores again after a crash cut the first short. */
        attempt: number;
        promptTokens: number;
      }
    | {
        type: "explore-finished";
        attempt: number;
        outcome: AttemptResult["outcome"];
        /** The agent's account of what it found, bounded; the planner gets it. */
        findings: string;
        /** Tool calls refused as changes (or failing), with what the agent was told. */
        refused: string[];
        /** Files the session changed in its worktree all the same: discarded, never merged. */
        wrote: string[];
        usage: Usage;
        durationMs: number;
      }
    | {
        type: "plan-created";
        ledger: TaskLedger;
        decomposed: boolean;
        repaired: boolean;
        /** Tokens the planning calls took. */
        usage: Usage;
      }
    | {
        type: "sub-task-started";
        subTaskId: string;
        attempt: number;
        promptTokens: number;
        /** The agent model of this attempt when it is not the executor's default (an escalation). */
        agentModel?: string;
        /** With worktrees: the commit the attempt's worktree was made from. */
        from?: string;
        /** One of a round's parallel candidates; `replaces` one a stopped process never saw finish. */
        candidate?: { round: number; replaces?: number };
      }
    /** Parallel candidates of one sub-task, all from the same commit; attempts numbered ahead. */
    | {
        type: "candidates-started";
        subTaskId: string;
        /** 1 for the sub-task's first round. */
        round: number;
        /** Why: the planner marked it risky, the run gives every sub-task candidates, or the ladder. */
        reason: CandidateRoundReason;
        from?: string;
        candidates: { attempt: number; agentModel?: string }[];
      }
    /** The round's choice, once every candidate was judged: the winner is merged, the rest kept. */
    | {
        type: "candidates-chosen";
        subTaskId: string;
        round: number;
        /** Absent when no candidate was complete: the ladder goes on. */
        winner?: number;
        /** Who chose: the comparative judge, the tie rule, the only complete one, or none was. */
        by: "judge" | "rule" | "single" | "none";
        /** The judge's reasons, or the rule's. */
        reason: string;
        candidates: CandidateOutcome[];
        /** The comparative judge's call. */
        usage: Usage;
      }
    | { type: "agent-event"; subTaskId: string; attempt: number; event: AgentEvent }
    /** A process an attempt started; stored so a resumed run can stop it if a crash left it running. */
    | ({ type: "attempt-process"; subTaskId: string; attempt: number } & AttemptProcess)
    /**
     * One model step of a running attempt ended, with its tokens: stored so a session a crash kills
     * (it never reports `attempt-finished`) still counts in the report and the budgets.
     */
    | { type: "attempt-step"; subTaskId: string; attempt: number; usage: Usage }
    | {
        type: "attempt-finished";
        subTaskId: string;
        attempt: number;
        result: AttemptResult;
        /** With worktrees: everything the attempt changed, as one commit. */
        commit?: string;
      }
    | {
        type: "sub-task-evaluated";
        subTaskId: string;
        attempt: number;
        entry: ProgressEntry;
        /** With worktrees: the attempt's commit, its message now holding the evaluator's summary. */
        commit?: string;
      }
    /** A completed attempt's work did not merge into the run's branch: it is incomplete after all. */
    | {
        type: "sub-task-conflicted";
        subTaskId: string;
        attempt: number;
        /** Files both sides changed. */
        files: string[];
        /** Completed sub-tasks whose merged work changed those files. */
        with: string[];
        entry: ProgressEntry;
      }
    /**
     * The integration gate ran its checks on a merged result: the run's tip with `parts` merged on
     * it (none: the final tip). Logged before any part lands or is sent back.
     */
    | {
        type: "integration-checked";
        /** Sub-tasks whose work the result holds on top of the tip, in merge order. */
        parts: string[];
        /** The result checked (a speculative tip); absent in a shared directory. */
        commit?: string;
        /** Its tree: a tree checked once is never checked again, across restarts too. */
        tree?: string;
        /** The final tip, checked before the run's change is applied. */
        final?: true;
        passed: boolean;
        results: GateCheckResult[];
        durationMs: number;
      }
    /**
     * A completed attempt's work broke the integration gate's checks once merged: it is incomplete
     * after all, and goes through the ladder like a merge conflict.
     */
    | {
        type: "sub-task-integration-failed";
        subTaskId: string;
        attempt: number;
        /** Completed sub-tasks whose work it met on the run's branch. */
        with: string[];
        entry: ProgressEntry;
        /** The merged result that failed: its next attempt continues from it. */
        from?: string;
      }
    /**
     * A round's winner whose work could not land (it broke the integration gate, or conflicted)
     * gives way to the next complete candidate; `winner` is now that one.
     */
    | {
        type: "candidate-gave-way";
        subTaskId: string;
        round: number;
        /** The winner that could not land. */
        attempt: number;
        winner: number;
        reason: string;
      }
    /** The request, judged as a whole once every sub-task was done. */
    | {
        type: "acceptance-judged";
        round: number;
        /** `unavailable`: no verdict could be had (the call failed); the run's work stands. */
        verdict: "satisfied" | "unsatisfied" | "unavailable";
        missing: AcceptanceGap[];
        /** Why there is no verdict, when `unavailable`. */
        reason?: string;
        usage: Usage;
      }
    | { type: "sub-task-retrying"; subTaskId: string; attempt: number; feedback: string }
    /**
     * A model provider refused work (issue 49): an attempt ended `rate-limited`, or the manager's
     * own call was refused after its retries. Starts toward `key` wait until `until`. A `quota`
     * (or a wait past what the run may spend) has no `until`: waiting does not help.
     */
    | {
        type: "provider-limited";
        /** The governor's key: the agent model (`anthropic/claude-sonnet-4-5`), `agent` for the executor's own, or the manager's `provider/model`. */
        key: string;
        /** The provider, for people: `anthropic`. */
        provider: string;
        limit: ProviderLimit;
        /** Who met it: a sub-task's attempt, or the manager's own call. */
        subTaskId?: string;
        attempt?: number;
        call?: "manager";
        /** Starts toward `key` wait until then (ISO 8601); absent when waiting does not help. */
        until?: string;
        /** How long from now. */
        waitMs: number;
        /** Why waiting cannot help, one line naming the provider; set when `until` is absent. */
        reason?: string;
        /** Nothing can go on past it (no alternate agent model is left): the run stops starting work. */
        stops?: true;
      }
    | {
        type: "sub-task-completed";
        subTaskId: string;
        attempts: number;
        entry: ProgressEntry;
        /** With worktrees: its commit, the merge into the run's branch and the files the merge changed. */
        workspace?: SubTaskMerge;
      }
    | {
        type: "sub-task-failed";
        subTaskId: string;
        attempts: number;
        reason: string;
        /** Why, as a value (absent in logs written before it existed). */
        code?: SubTaskFailure;
        /** Manager tokens spent on a last step that did not work out (a rejected replan). */
        usage?: Usage;
      }
    | { type: "sub-task-skipped"; subTaskId: string; reason: string; blockedBy: string[] }
    /** The run stopped (a cancel, a budget) while the sub-task ran or before it started. */
    | { type: "sub-task-cancelled"; subTaskId: string; reason: string }
    | ({ type: "budget-exhausted" } & BudgetExhaustion)
    /**
     * The money budget cannot be enforced: calls of these models have no known price, so what
     * they cost is not counted. Once per model a session.
     */
    | { type: "budget-unenforceable"; kind: "cost"; limit: number; unpricedModels: string[] }
    /** Retries did not finish a sub-task; the next step of the ladder is taken. */
    | {
        type: "sub-task-escalated";
        subTaskId: string;
        step: "alternate-model" | "candidates" | "replan";
        reason: string;
        agentModel?: string;
      }
    /** A plan or a replan waits for the host's `reviewPlan`; stored, so a restart asks again. */
    | {
        type: "plan-review-requested";
        kind: "plan" | "replan";
        ledger: TaskLedger;
        replaced?: string[];
        reason?: string;
      }
    | {
        type: "plan-reviewed";
        kind: "plan" | "replan";
        action: "approve" | "edit" | "reject";
        /** The ledger that runs after the review (absent when rejected). */
        ledger?: TaskLedger;
        reason?: string;
      }
    /** A failed sub-task and its dependents were replaced by new sub-tasks; completed work is kept. */
    | {
        type: "plan-revised";
        ledger: TaskLedger;
        replaced: string[];
        added: string[];
        reason: string;
        usage: Usage;
        /** The acceptance round whose missing work the added sub-tasks are (nothing replaced). */
        acceptance?: number;
      }
    /** A slot got the project's environment: dependencies copied, files included, setup run. */
    | { type: "slot-prepared"; preparation: SlotPreparation }
    /** The run's branch is final; its change was applied to the user's tree, or why not. */
    | ({ type: "workspace-finished" } & WorkspaceOutcome)
    | { type: "run-finished"; report: RunReport }
    /** The run could not go on (an invalid plan, a provider refusing the key); `result` rejects. */
    | { type: "run-failed"; error: { code: string; message: string } }
  );

export type CandidateRoundReason = "risky" | "all" | "ladder";

/** One candidate of a round as the choice left it. */
export interface CandidateOutcome {
  attempt: number;
  agentModel?: string;
  /** Its work (with worktrees), kept under `ref` whether it won or not. */
  commit?: string;
  ref?: string;
  /** Its own evaluation: checks passed and the judge found it complete. */
  completed: boolean;
  /** Why it was not chosen (absent for the winner). */
  lost?: string;
  /** It was running when the manager process stopped; this attempt ran it again. */
  replacedBy?: number;
  /** Its agent session and its evaluation. */
  usage: Usage;
}

export type RunEventType = RunEvent["type"];
export type RunEventOf<K extends RunEventType> = Extract<RunEvent, { type: K }>;
