import type { SubTask } from "../ledger/sub-task.js";
import type { Usage } from "../usage/usage.js";
import type { Sandbox, SandboxRefusal } from "./sandbox.js";
import type { OutsideChanges } from "./workspace.js";

/**
 * How an attempt ended. `finished`: the agent stopped on its own; `truncated`: it stopped because
 * output ran out (or stopped with almost nothing after tool use); `error`: provider, tool or
 * process failure; `timeout`: the attempt's time ran out; `cancelled`: its signal was aborted;
 * `rate-limited`: its model provider refused it for a while or for good (`limit` says which),
 * after the agent's own retries: not the agent's doing, so not an attempt the ladder counts.
 */
export type AttemptOutcome =
  | "finished"
  | "truncated"
  | "error"
  | "timeout"
  | "cancelled"
  | "rate-limited";

/**
 * What a model provider said when it refused requests. `rate-limit` (429) and `overloaded` (529,
 * an overloaded 503) pass: the window opens again. `quota` does not (OpenAI's
 * `insufficient_quota`, a billing error): waiting does not help.
 */
export interface ProviderLimit {
  kind: "rate-limit" | "overloaded" | "quota";
  /** The provider as the agent model names it (`anthropic` in `anthropic/claude-sonnet-4-5`), when known. */
  provider?: string;
  /** How long the provider asked to wait (its `Retry-After`), in milliseconds, when it said. */
  retryAfterMs?: number;
  /** The HTTP status, when known (429, 529, 503, …). */
  statusCode?: number;
  /** What the provider said, one line, bounded. */
  message: string;
}

/** A tool call the agent made, with input and output already trimmed to a bounded size. */
export interface ToolCallRecord {
  tool: string;
  status: string;
  input: string;
  output: string;
}

/** What the executor returns for one attempt; everything in it is bounded in size. */
export interface AttemptResult {
  outcome: AttemptOutcome;
  /** The agent's last text, which is usually its own account of what it did. */
  finalText: string;
  toolCalls: ToolCallRecord[];
  /** Finish reason of each model step, in order (`stop`, `length`, `tool-calls`, …). */
  stepFinishReasons: string[];
  /** Files the agent wrote or edited, relative to the working directory, when known. */
  filesChanged: string[];
  /**
   * Set by the workspace, not the executor: changes outside the run's directory, left out (or,
   * `shared`, found in the user's tree and left there).
   */
  outsideCwd?: OutsideChanges;
  usage: Usage;
  /** Why it ended badly, when it did. */
  error?: string;
  /** Set with outcome `rate-limited`: what the provider said, and how long it asked to wait. */
  limit?: ProviderLimit;
  /** False when no further attempt can do better (a missing binary, a config opencode rejects). */
  retryable?: boolean;
  /**
   * True when the attempt ended through no doing of the agent: its worker or server was lost, its
   * process could not start or was killed from outside, the executor itself failed. Such an
   * attempt is not judged (there is no work of the agent's to weigh); the next attempt is told why.
   */
  infrastructureError?: boolean;
  durationMs: number;
  /** Executor-specific facts for diagnosis: session id, exit code, stderr tail. */
  details?: Record<string, unknown>;
  /** What the OS sandbox refused the attempt (a path written, a host contacted), bounded. */
  refusals?: SandboxRefusal[];
}

/** A typed event the agent produced while an attempt runs, forwarded to the host as it arrives. */
export type AgentEvent =
  | { type: "step-start" }
  | { type: "text"; text: string }
  | { type: "tool-use"; tool: string; status: string; input: string; output: string }
  /** A tool call began (told by executors that see it start; its `tool-use` comes when it ends). */
  | { type: "tool-started"; tool: string; input: string }
  | { type: "step-finish"; reason: string; usage?: Usage }
  | { type: "error"; message: string; statusCode?: number }
  /** Told by an executor that sends attempts elsewhere: the attempt waits for a worker, or runs. */
  | { type: "executor-status"; status: "waiting-for-worker" | "running" }
  | { type: "unknown"; rawType: string };

/** An OS process an attempt started, identified by pid and start time so a reused pid is never hit. */
export interface AttemptProcess {
  pid: number;
  startTime: string;
  /**
   * An environment entry (`NAME=value`) every process of the attempt inherits, reported with its
   * first process: `reclaim` finds by it what the attempt started after its last report.
   */
  marker?: string;
}

export interface ExecuteOptions {
  /** The sub-task being attempted (for executors that configure per sub-task). */
  subTask: SubTask;
  /** The run the attempt belongs to (an executor that sends attempts elsewhere names them by it). */
  runId?: string;
  /** 1 for the first attempt, then 2, 3, … */
  attempt: number;
  /** The directory the agent works in. */
  cwd: string;
  /** Use this agent model for the attempt instead of the executor's own (an escalation step). */
  agentModel?: string;
  /**
   * The agent may read and search but not change a file or run a command (the exploration before
   * a plan); an executor refuses such tool calls, and the agent is told so.
   */
  readOnly?: boolean;
  /**
   * One of a round's parallel candidates: an executor with few seats (the server executor's
   * servers) serves waiting attempts that are not candidates first.
   */
  candidate?: { round: number };
  abortSignal: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** Told of every process the attempt starts; the manager stores them to clean up after a crash. */
  onProcess?: (process: AttemptProcess) => void;
  /**
   * The OS boundary the agent and every process under it run inside (`ManagerOptions.sandbox`):
   * an executor starts its agent through `sandbox.wrap`. Absent: unconfined.
   */
  sandbox?: Sandbox;
}

/** Runs one attempt of one sub-task in a fresh agent session. */
export interface Executor {
  run(prompt: string, options: ExecuteOptions): Promise<AttemptResult>;
  /**
   * Keeps a process the run starts next to the attempts (a check command, in its own process
   * group) from outliving the host, as the executor does for its attempts. Returns what to call
   * once the process has ended.
   */
  guard?(process: AttemptProcess): () => void;
  /**
   * True when an attempt a dead manager process left running can be asked for again under the
   * same number and still finishes once (attempts run elsewhere, as jobs): a resumed run then
   * takes its result instead of starting the next attempt.
   */
  readonly resumesAttempts?: boolean;
  /**
   * Checks what every attempt needs (the agent's binary, the agent models it may be given: its
   * own and `agentModels`) before the run pays for a plan; throws a typed error naming what is
   * wrong (`InvalidConfigError` for an unknown model, `ExecutorError` for a missing binary).
   */
  preflight?(input: { agentModels: readonly string[]; abortSignal: AbortSignal }): Promise<void>;
  /**
   * Starts what attempts will need (the server executor's servers), up to `count` at once, while
   * the run plans: in the background, never throwing; an attempt meets any failure itself.
   */
  warm?(input: { count: number; abortSignal: AbortSignal; sandbox?: Sandbox }): void;
  /** Stops processes of attempts a dead manager process left running; called on resume. */
  reclaim?(processes: readonly AttemptProcess[]): Promise<void>;
  /**
   * Stops what the executor keeps running between attempts (the server executor's servers). The
   * host that made the executor calls it once its runs are over; the manager never does.
   */
  close?(): Promise<void>;
}
