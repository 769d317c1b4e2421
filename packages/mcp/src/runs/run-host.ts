import type { PlanResult, RunEvent, RunOptions, RunStore, TaskRun } from "@taskledger/core";

/**
 * What the MCP server needs from its host (the `taskledger mcp` command builds it from its
 * options): plan, start and resume runs in a store. It holds the models, the executor and the
 * secrets; the server never sees a key.
 */
export interface RunHost {
  /** Plans a request without running it. */
  plan(request: string, options: { abortSignal: AbortSignal }): Promise<PlanResult>;
  /** Starts a run (logged in `store`) and returns it at once. */
  start(request: string, options: RunOptions & { cwd: string }): Promise<TaskRun>;
  /** Continues a stored run from its log (`history`). */
  resume(runId: string, options: RunOptions & { history: readonly RunEvent[] }): Promise<TaskRun>;
  /** The durable store every run of this server is logged in. */
  store: RunStore;
  /** The store's directory, shown to the caller and read for `list_runs`. */
  storeDirectory: string;
  /** Largest plan an edit may hold. */
  maxSubTasks: number;
  /**
   * Stops what the host keeps warm between runs (the opencode servers); the next plan or run
   * starts it again. Called after `idleReleaseSeconds` without a run.
   */
  release?(): Promise<void>;
}
