import type { AgentEvent, AttemptResult, SubTask } from "@taskledger/core";

/** The BullMQ queue attempts travel on, unless a host names another. */
export const defaultQueueName = "taskledger-attempts";

/** The Redis pub/sub channel a coordinator asks workers on to cancel a job. */
export const cancelChannel = (queueName: string) => `${queueName}:cancel`;

/** Everything a worker needs to run one attempt; no secret travels in it. */
export interface AttemptJobData {
  runId: string;
  subTask: SubTask;
  attempt: number;
  prompt: string;
  /** The agent model for this attempt; the worker's own default when absent. */
  agentModel?: string;
  /** The agent may read but not change anything (the exploration before a plan). */
  readOnly?: boolean;
  /** Git remote both sides reach (a URL or a path). */
  remote: string;
  /**
   * The commit the attempt starts from, on the remote under `startRef`: the attempt's own start
   * ref, or an earlier attempt's when the coordinator already pushed that commit.
   */
  start: string;
  startRef: string;
  /** Where the worker pushes the attempt's commit. */
  workRef: string;
  /**
   * The coordinator takes the attempt's commit inside the result when its objects pack into at
   * most this many bytes: the worker then pushes nothing. Absent (an older coordinator): pushed.
   */
  inlineWorkBytes?: number;
  /** The run's directory inside the repository ("" at the top, else with a trailing slash). */
  prefix: string;
  /**
   * The run's setup command, run in the worker's worktree before the agent: a command, never a
   * file or a secret (the user's dependency directories cannot travel).
   */
  setup?: { command: string; timeoutMs: number };
}

/** Who ran an attempt, kept in the attempt's `details.worker`. */
export interface WorkerIdentity {
  host: string;
  pid: number;
  /** The BullMQ job the attempt ran as. */
  jobId: string;
}

/** What a worker returns for a job. */
export interface AttemptJobResult {
  result: AttemptResult;
  /** The attempt's commit, pushed to the job's `workRef`; absent when it could not be made. */
  commit?: string;
  /**
   * The commit's objects that its start lacks, as a git pack (base64), when they fit the job's
   * `inlineWorkBytes`: the commit then travels here, not through the remote.
   */
  pack?: string;
  worker: WorkerIdentity;
  /** How long the job waited in the queue before this worker took it. */
  waitedMs?: number;
}

/** What travels as a job's progress while it runs: one agent event at a time. */
export interface AttemptJobProgress {
  event: AgentEvent;
}

/**
 * One job per attempt, named by run, sub-task and attempt, so sending it again is a no-op.
 * BullMQ keys must not hold `:`; sub-task ids are encoded so none appears.
 */
export function attemptJobId(runId: string, subTaskId: string, attempt: number): string {
  return `${encodeURIComponent(runId)}.${encodeURIComponent(subTaskId).replace(/\./g, "%2E")}.${attempt}`;
}

/** Refs on the shared remote that carry one attempt's start and its work. */
export function attemptRefs(runId: string, subTaskId: string, attempt: number) {
  const root = `refs/taskledger/${runId}/queue/${subTaskId.replace(/\./g, "%2E")}/${attempt}`;
  return { start: `${root}/start`, work: `${root}/work` };
}
