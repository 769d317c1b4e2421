import { InvalidRequestError } from "./errors.js";
import { EventHub } from "./event-hub.js";
import {
  type ManagerOptions,
  type ResolvedManagerOptions,
  resolveManagerOptions,
} from "./manager-options.js";
import { type PlanResult, planRequest } from "./planner.js";
import type { RunEvent } from "./run-events.js";
import { RunExecution } from "./run-execution.js";
import type { RunReport } from "./run-report.js";
import type { TaskLedgerInput } from "./task-ledger.js";
import { TaskRun } from "./task-run.js";

export interface RunOptions {
  abortSignal?: AbortSignal;
  /** Working directory of the agents for this run; overrides the manager's `cwd`. */
  cwd?: string;
  /** Run this plan instead of asking the model for one; it is validated like a generated one. */
  plan?: TaskLedgerInput;
  /** Called with every event, in order. */
  onEvent?: (event: RunEvent) => void;
}

/** Turns requests into Task Ledgers and runs them. Holds no per-run state; runs are independent. */
export class Manager {
  private readonly options: ResolvedManagerOptions;

  constructor(options: ManagerOptions) {
    this.options = resolveManagerOptions(options);
  }

  /** Starts a run and returns its handle at once; a bad request throws here, synchronously. */
  start(request: string, options: RunOptions = {}): TaskRun {
    const text = this.checkRequest(request);
    const runId = this.options.createRunId();
    const hub = new EventHub();
    if (options.onEvent) hub.on("*", options.onEvent);
    const execution = new RunExecution(
      this.options,
      {
        runId,
        request: text,
        cwd: options.cwd ?? this.options.cwd ?? process.cwd(),
        ...(options.plan === undefined ? {} : { plan: options.plan }),
        ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
      },
      hub,
    );
    return new TaskRun(runId, hub, () => execution.execute());
  }

  /** Runs a request to the end and resolves with its report. */
  run(request: string, options: RunOptions = {}): Promise<RunReport> {
    return this.start(request, options).result;
  }

  /** Plans a request without running it (what `taskledger plan` prints). */
  plan(request: string, options: { abortSignal?: AbortSignal } = {}): Promise<PlanResult> {
    const text = this.checkRequest(request);
    return planRequest({
      model: this.options.model,
      request: text,
      maxSubTasks: this.options.maxSubTasks,
      decompose: this.options.decompose,
      abortSignal: options.abortSignal ?? new AbortController().signal,
    });
  }

  private checkRequest(request: string): string {
    if (typeof request !== "string" || request.trim() === "") {
      throw new InvalidRequestError("The request is empty.");
    }
    if (request.length > this.options.maxRequestChars) {
      throw new InvalidRequestError(
        `The request has ${request.length} characters; the limit is ${this.options.maxRequestChars}.`,
      );
    }
    return request.trim();
  }
}

export function createManager(options: ManagerOptions): Manager {
  return new Manager(options);
}
