import type { Sandbox } from "./sandbox.js";

/**
 * Where attempts work and what becomes of their work. `shared`: every attempt works in the run's
 * directory itself. `worktree`: each attempt works in its own git worktree, its work becomes one
 * commit, and completed sub-tasks are merged into the run's branch one at a time.
 */
export type Isolation = "shared" | "worktree";

/** What a run logs about its workspace at the start, so a resume finds it as it was. */
export type WorkspaceRecord =
  | {
      kind: "shared";
      /** Why worktrees were not used when they would have been the default. */
      notice?: string;
    }
  | {
      kind: "worktree";
      /** Top of the user's work tree. */
      root: string;
      /** The run's directory inside it, with a trailing slash ("" at the top). */
      prefix: string;
      /** The commit holding the user's tree as it was at the start, uncommitted files included. */
      base: string;
      /** The branch the run's result is left on (`taskledger/<run id>`). */
      branch: string;
      /** Whether the result is applied to the user's tree at the end. */
      apply: boolean;
      /** What every slot is given; logged so a resumed run prepares slots the same way. */
      environment?: EnvironmentSettings;
    };

/** How a slot (a reused worktree) gets the project's environment. */
export interface EnvironmentSettings {
  /** Copy the ignored dependency directories found in the user's tree (`node_modules`, `.venv`). */
  dependencies: boolean;
  /** gitignore patterns of ignored files to copy, besides the repository's `.worktreeinclude`. */
  include: string[];
  setup?: SetupSettings;
}

export interface SetupSettings {
  /** A shell command run in the slot (in the run's directory there). */
  command: string;
  /** Files whose change makes it run again, as git pathspecs (default: the common lockfiles). */
  inputs: string[];
  timeoutMs: number;
}

/** What one slot was given before an attempt ran in it. */
export interface SlotPreparation {
  slot: number;
  /**
   * Why: a new slot; its inputs (lockfiles) changed since it was last prepared; or a slot an
   * earlier run kept, its environment still right (nothing copied, no setup).
   */
  reason: "new" | "inputs-changed" | "reused";
  /** Ignored dependency directories copied from the user's tree, relative to the repository's top. */
  dependencies: string[];
  /** Where they were copied from (the repository's top). */
  from?: string;
  /** Ignored files copied in by `.worktreeinclude` and `include` (at most 20 named). */
  included: string[];
  includedCount: number;
  /** The setup command's run; `output` is its last 2,000 characters. */
  setup?: { command: string; exitCode: number; durationMs: number; output?: string };
  durationMs: number;
}

/** An attempt's work, as git sees it. */
export interface AttemptCapture {
  commit: string;
  /** Paths it changed, relative to the repository's top. */
  filesChanged: string[];
  /** What it changed outside the run's directory: not in `commit`, never merged or applied. */
  outsideCwd?: OutsideChanges;
}

/** Changes an attempt made outside the run's `cwd`, left out of its work. */
export interface OutsideChanges {
  /** Paths relative to the repository's top (at most 50). */
  paths: string[];
  /** How many paths in all. */
  count: number;
  /**
   * In a shared directory there is no slot to leave them in: they were found in the user's tree
   * (changed while the attempt ran, by it or anything else) and stay there, not reverted.
   */
  shared?: true;
}

/** The directory one attempt works in. */
export interface AttemptSpace {
  /** Where the agent works and checks run. */
  cwd: string;
  /** Everything the attempt changed as one commit on top of where it started; undefined when shared. */
  capture(message: string): Promise<AttemptCapture | undefined>;
  /** Removes the directory (the commit stays). */
  dispose(): Promise<void>;
  /** Shared: what changed outside the run's directory while the attempt ran (after `capture`). */
  outside?(): Promise<OutsideChanges | undefined>;
}

export type Integration =
  | {
      merged: true;
      merge: string;
      filesChanged: string[];
      /** The merge's tree: the integration gate keeps its verdicts by tree, never checking one twice. */
      tree?: string;
      /** The merge's tree is the merged commit's own: nothing landed since its work started. */
      ownTree?: boolean;
    }
  | { merged: false; conflicts: string[] };

/** What became of the run's branch at the end. */
export interface WorkspaceOutcome {
  branch: string;
  /** The run's branch tip. */
  commit: string;
  /** True when the combined change was applied to the user's tree as uncommitted changes. */
  applied: boolean;
  /** One line for the user: what was applied, or why not and how to take the branch. */
  note: string;
}

/** One run's workspace, opened at its start or on resume. */
export interface RunWorkspace {
  readonly record: WorkspaceRecord;
  /** A directory for an attempt holding commit `from` (default: the run's tip), or the shared one. */
  attempt(
    request: { subTaskId: string; attempt: number; from: string | undefined },
    abortSignal: AbortSignal,
  ): Promise<AttemptSpace>;
  /** The same commit with a new message (the evaluator's summary is known only after it). */
  reword(commit: string, message: string): Promise<string>;
  /**
   * Merges a completed sub-task's commit into the run's branch, one merge at a time; `onMerged`
   * runs before the next merge starts, so the log records merges in the order they were made.
   */
  integrate(request: {
    subTaskId: string;
    title: string;
    commit: string;
    onMerged: (integration: Integration) => Promise<void>;
  }): Promise<Integration>;
  /**
   * Merges `commit` onto `at` as a new commit without moving the run's branch: a speculative tip
   * the integration gate checks before the work lands. With `advance`, merges are gated in batches.
   */
  merge?(request: {
    at: string;
    subTaskId: string;
    title: string;
    commit: string;
  }): Promise<Integration>;
  /**
   * Moves the run's branch from `from` to `to`, a commit `merge` made on top of it; throws when
   * the branch is no longer at `from`.
   */
  advance?(request: { from: string; to: string }): Promise<void>;
  /** Leaves the result on the run's branch and applies it to the user's tree if it is unchanged. */
  finish(request: { apply: boolean }): Promise<WorkspaceOutcome | undefined>;
  /** Removes every directory the run made; idempotent. */
  close(): Promise<void>;
  /**
   * Makes the first attempt's directory ready (its environment, a setup command) once the run is
   * logged, while the planner thinks; a broken setup stops the planner and fails the run.
   */
  prepare?(abortSignal: AbortSignal): Promise<void>;
  /**
   * Starts making directories ready in the background until `count` are ready or in use, so the
   * first wave of attempts starts at once; a failure there is met by the attempt that needs one.
   */
  warm?(count: number, abortSignal: AbortSignal): void;
  /**
   * The change from `from` to `commit`, at most `maxChars` of it, and how many lines it adds and
   * removes; the comparative judge reads candidates' changes through it.
   */
  diff?(
    request: { from: string; commit: string; maxChars: number },
    abortSignal: AbortSignal,
  ): Promise<{ text: string; linesChanged: number }>;
  /** Keeps an attempt's final commit under the run's refs; returns the ref's name. */
  keep?(request: { subTaskId: string; attempt: number; commit: string }): Promise<string>;
  /** Slots prepared since the last call (by `prepare` or `attempt`), for the run's log. */
  takePreparations?(): SlotPreparation[];
}

/** What a run asks of its workspace provider, at its start or on resume. */
export interface OpenWorkspaceInput {
  runId: string;
  cwd: string;
  /** `auto`: isolated when the provider can isolate `cwd`, else shared with a notice. */
  isolation: Isolation | "auto";
  /** Apply the run's change to the user's tree at the end. */
  apply: boolean;
  /** A resumed run's workspace as its log tells it, with the run branch's logged tip. */
  recorded?: { record: WorkspaceRecord | undefined; tip: string | undefined };
  abortSignal?: AbortSignal;
  /** The OS sandbox a slot's setup command runs inside (with the project's network allowance). */
  sandbox?: Sandbox;
}

/**
 * Opens the workspace a run's attempts work in. Core has only shared workspaces; isolation (git
 * worktrees with the project's environment) comes from `@taskledger/git-workspace`.
 */
export interface WorkspaceProvider {
  /** The isolation this provider can give; `worktree` is refused at `createManager` without it. */
  readonly isolates: boolean;
  open(input: OpenWorkspaceInput): Promise<RunWorkspace>;
}
