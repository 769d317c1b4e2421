// What the shared executor suite asks of an agent: its factory, its wire, and what it is expected
// to do where agents differ.
import type { AttemptResult, Executor, ProviderLimit } from "@taskledger/core";
import type { RecordedRequest, ScriptedRawBody, ScriptedToolCall } from "@taskledger/testing";

/** One case's view of the shared model server: its own requests, and those it had no step for. */
export interface SuiteServer {
  readonly url: string;
  readonly openaiBaseURL: string;
  readonly anthropicBaseURL: string;
  readonly requests: RecordedRequest[];
  readonly extra: RecordedRequest[];
}

/** What a case asks of the executor, in no agent's terms; each agent maps it to its options. */
export interface SuiteOptions {
  timeoutMs?: number;
  maxSteps?: number;
  keepAttemptDirs?: boolean;
  env?: Record<string, string>;
  binaryPath?: string;
  /** A config the agent refuses to start with. */
  badConfig?: boolean;
  /** Make the agent refuse to run commands without asking (opencode: `bash: ask`). */
  askForCommands?: boolean;
  /** Host variables the agent gets besides its own list. */
  passEnv?: string[];
}

/** An agent, as the suite drives it. */
export interface SuiteAgent {
  make(server: SuiteServer, options: SuiteOptions): Executor;
  /**
   * One executor serves every case made with the default options (a server executor: its servers
   * stay up between attempts, as in a run), rather than one executor a case; an executor of other
   * options serves its one attempt and is closed when it ends.
   */
  reusable?: boolean;
  /**
   * Another agent of the same file whose answers become the same events under the same outcome
   * rules (opencode's process per attempt and its server). The cases that only classify
   * a model's answer (a cut-off, a provider's status) run on that one and are skipped here; every
   * case about starting, stopping, confining or talking to the agent still runs on both.
   */
  answersReadAs?: string;
  /**
   * A second model every executor `make` returns can run, named by an attempt's `agentModel` in the
   * per-attempt model case, and how it appears on the wire.
   */
  otherModel: { agentModel: string; wire: string };
  /** A tool call that writes `content` to `path` (relative to `cwd`). */
  write(cwd: string, path: string, content: string): ScriptedToolCall;
  /** A tool call that runs a shell command. */
  shell(command: string): ScriptedToolCall;
  /** A streamed reply in the agent's wire protocol that never says how it finished. */
  noFinishStream: ScriptedRawBody;
  expects: {
    /** Length finishes the agent continues by itself before it stops (Claude Code: 3). */
    lengthContinues: number;
    /** Requests a provider 500/429 costs before the attempt ends (the agent's own retries). */
    providerErrorRequests: number;
    /** Exit code of an attempt that ended on a provider error (a server session: 0). */
    providerErrorExit: number;
    /** The HTTP status the agent reports for a provider error of `status` (of a limit's `kind`). */
    statusCodeOf(status: number, kind: ProviderLimit["kind"] | undefined): number | undefined;
    /** The agent passes on the provider's Retry-After (opencode gives its response headers). */
    retryAfter: boolean;
    /** The provider a provider limit names (the agent model's provider part). */
    limitProvider: string;
    /** Files the write tool wrote are listed as changed (not when the agent writes through a shell). */
    writeListsFile: boolean;
    /** Each step reports its own output tokens (Codex reports one usage per turn). */
    perStepUsage: boolean;
    /** The process the result names ends with the attempt (a server outlives it). */
    leaderExits: boolean;
    /** Words the missing-binary error must hold. */
    installHint: string;
    /** The error an attempt with `badConfig` ends with. */
    badConfigError: RegExp;
    /** How an attempt that asked to run a command nobody may approve ends. */
    commandRefused(result: AttemptResult, requests: readonly RecordedRequest[]): void;
    /** What the model is told when a read-only attempt tries to write. */
    readOnlyRefusal: RegExp;
    /** The stop caused by a stream with no finish reason (`unknown-finish-loop` for opencode). */
    noFinishStop?: string;
    /** Test timeout for the hung-model case, whose executor times out after `hangTimeoutMs`. */
    hangTimeoutMs: number;
  };
}
