import { resolve } from "node:path";
import { InvalidRequestError, RunNotFoundError } from "../errors/errors.js";
import type { TaskLedgerInput } from "../ledger/task-ledger.js";
import type { RunEvent, TraceRef } from "../log/run-events.js";
import { recoverRun } from "../log/run-recovery.js";
import { isFinal } from "../log/run-state.js";
import type { ReviewPlan } from "../plan/plan-review.js";
import { type PlanResult, planRequest } from "../plan/planner.js";
import type { ProjectDigest } from "../ports/project-source.js";
import type { RunReport } from "../report/run-report.js";
import { checkObject, describeGiven, refuseUnknownKeys } from "../settings/host-input-check.js";
import { type RunSettingsInput, resolveRunSettings } from "../settings/run-settings.js";
import type { Usage } from "../usage/usage.js";
import { EventHub } from "./event-hub.js";
import {
  type ManagerOptions,
  type ResolvedManagerOptions,
  resolveManagerOptions,
} from "./manager-options.js";
import { executeRun, type LiveState } from "./run-execution.js";
import { TaskRun } from "./task-run.js";

export interface RunOptions {
  abortSignal?: AbortSignal;
  /** Working directory of the agents for this run; overrides the manager's `cwd`. */
  cwd?: string;
  /** Run this plan instead of asking the model for one; it is validated like a generated one. */
  plan?: TaskLedgerInput;
  /** Tokens spent making `plan` (with `Manager.plan`), counted as the manager's in the report. */
  planUsage?: Usage;
  /** Review this run's plan and replans with this hook instead of the manager's `reviewPlan`. */
  reviewPlan?: ReviewPlan;
  /** Called with every event, in order. */
  onEvent?: (event: RunEvent) => void;
  /**
   * Settings for this run over the manager's (on `resume`, over the ones the run logged), and
   * the host's own settings to log with them (`host`: JSON, never a secret).
   */
  settings?: RunSettingsInput;
  /**
   * This session's trace context (`@taskledger/telemetry` sets it), logged in its `run-started`
   * or `run-resumed` record so a later session can link to it.
   */
  trace?: TraceRef;
}

const runOptionKeys: Record<keyof RunOptions, true> = {
  abortSignal: true,
  cwd: true,
  plan: true,
  planUsage: true,
  reviewPlan: true,
  onEvent: true,
  settings: true,
  trace: true,
};

/** A misspelt run option is refused by name, never ignored. */
function checkRunOptions(options: RunOptions): void {
  checkObject("options", options);
  refuseUnknownKeys(options, runOptionKeys, "run options");
}

/** Turns requests into Task Ledgers and runs them. Holds no per-run state; runs are independent. */
export class Manager {
  private readonly options: ResolvedManagerOptions;
  private readonly active = new Set<string>();

  constructor(options: ManagerOptions) {
    this.options = resolveManagerOptions(options);
  }

  /** Starts a run and returns its handle at once; a bad request throws here, synchronously. */
  start(request: string, options: RunOptions = {}): TaskRun {
    checkRunOptions(options);
    const text = this.checkRequest(request);
    const settings = resolveRunSettings(this.options.settings, options.settings);
    const runId = this.options.createRunId();
    return this.launch(runId, options, (hub, live) =>
      executeRun(
        this.options,
        {
          runId,
          request: text,
          cwd: absolute(options.cwd ?? this.options.cwd),
          settings,
          ...runInputs(options),
        },
        hub,
        live,
      ),
    );
  }

  /**
   * Continues a run from its log in the store, after a crash, a `kill -9` or a cancel: completed
   * sub-tasks are kept, an attempt that was running is run again under the next attempt number
   * (told what the interrupted one may have left), an attempt that finished unjudged is judged,
   * and the budgets spent so far still count. A run that already finished resolves with its report.
   * The run keeps the settings it logged (`options.settings` overrides them) and its directory
   * (`options.cwd` overrides it). `plan` is used only when the run stopped before its plan was
   * recorded and was not given one at start.
   */
  resume(runId: string, options: RunOptions = {}): TaskRun {
    checkRunOptions(options);
    return this.launch(runId, options, async (hub, live) => {
      const records = await this.options.store.read(runId);
      if (records.length === 0) throw new RunNotFoundError(runId);
      const recovered = recoverRun(records, runId);
      hub.remembered(records);
      if (isFinal(recovered) && recovered.report) return recovered.report;
      return executeRun(
        this.options,
        {
          runId,
          request: recovered.request,
          cwd: absolute(options.cwd ?? recovered.cwd ?? this.options.cwd),
          settings: resolveRunSettings(
            recovered.settings ?? this.options.settings,
            options.settings,
          ),
          recovered,
          ...runInputs(options),
        },
        hub,
        live,
      );
    });
  }

  private launch(
    runId: string,
    options: Pick<RunOptions, "onEvent">,
    execute: (hub: EventHub, live: LiveState) => Promise<RunReport>,
  ): TaskRun {
    // Two live executions of one run would dispatch the same attempts twice.
    if (this.active.has(runId)) {
      throw new InvalidRequestError(`Run "${runId}" is already running in this manager.`);
    }
    this.active.add(runId);
    const hub = new EventHub();
    if (options.onEvent) hub.on("*", options.onEvent);
    const live: LiveState = { state: undefined };
    const run = new TaskRun(
      runId,
      hub,
      () => execute(hub, live),
      () => live.state,
    );
    void run.result.finally(() => this.active.delete(runId)).catch(() => {});
    return run;
  }

  /** Runs a request to the end and resolves with its report. */
  run(request: string, options: RunOptions = {}): Promise<RunReport> {
    return this.start(request, options).result;
  }

  /** Plans a request without running it (what `taskledger plan` prints). */
  async plan(
    request: string,
    options: { abortSignal?: AbortSignal; cwd?: string } = {},
  ): Promise<PlanResult & { project?: ProjectDigest }> {
    const text = this.checkRequest(request);
    const abortSignal = options.abortSignal ?? new AbortController().signal;
    const cwd = absolute(options.cwd ?? this.options.cwd);
    // As a run plans: with the project's digest when there is a project to read.
    const project =
      this.options.project && cwd
        ? await this.options.project.digest(cwd, { abortSignal }).catch((error: unknown) => {
            if (abortSignal.aborted) throw error;
            return undefined;
          })
        : undefined;
    const result = await planRequest({
      model: this.options.model,
      request: text,
      maxSubTasks: this.options.settings.maxSubTasks,
      decompose: this.options.decompose,
      abortSignal,
      project: project?.text,
    });
    if (!project) return result;
    const { cached: _cached, ...digest } = project as ProjectDigest & { cached?: boolean };
    return { ...result, project: digest };
  }

  private checkRequest(request: string): string {
    if (typeof request !== "string") {
      throw new InvalidRequestError(`The request must be a string; got ${describeGiven(request)}.`);
    }
    if (request.trim() === "") throw new InvalidRequestError("The request is empty.");
    if (request.length > this.options.maxRequestChars) {
      throw new InvalidRequestError(
        `The request has ${request.length} characters; the limit is ${this.options.maxRequestChars}.`,
      );
    }
    return request.trim();
  }
}

function runInputs(options: RunOptions) {
  return {
    ...(options.plan === undefined ? {} : { plan: options.plan }),
    ...(options.planUsage ? { planUsage: options.planUsage } : {}),
    ...(options.reviewPlan ? { reviewPlan: options.reviewPlan } : {}),
    ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
    ...(options.trace
      ? { trace: { traceId: options.trace.traceId, spanId: options.trace.spanId } }
      : {}),
  };
}

/** A directory as the run logs and names it: absolute, so messages and a resume elsewhere agree. */
function absolute(cwd: string | undefined): string | undefined {
  return cwd === undefined || cwd === "" ? undefined : resolve(cwd);
}

export function createManager(options: ManagerOptions): Manager {
  return new Manager(options);
}
