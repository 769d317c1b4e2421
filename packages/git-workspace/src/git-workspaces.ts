import {
  type EnvironmentSettings,
  InvalidConfigError,
  type OpenWorkspaceInput,
  type RunWorkspace,
  sharedWorkspace,
  WorkspaceError,
  type WorkspaceProvider,
} from "@taskledger/core";
import { findRepository } from "./git/git-repository.js";
import { holdGitRunner } from "./git/git-runner.js";
import { openWorktreeWorkspace } from "./run/git-worktree-workspace.js";
import { watchOutside } from "./run/shared-outside-watch.js";
import { startWorktreeRun } from "./run/worktree-run.js";
import { defaultSetupInputs, defaultSetupTimeoutMs } from "./slots/setup-command.js";
import { defaultSlotLimits, type SlotLimits } from "./slots/slot-pool.js";

/** What every slot (a worktree an attempt works in) gets of the project's environment. */
export interface GitWorkspaceOptions {
  /**
   * Copy the ignored dependency directories of the user's tree into each slot: `node_modules` at
   * any depth and Python virtual environments. Copies, never links: nothing an agent does there
   * reaches the user's own. Default true.
   */
  dependencies?: boolean;
  /** gitignore patterns of ignored files each slot gets (`.env`), besides `.worktreeinclude`'s. */
  include?: readonly string[];
  /**
   * A shell command run in each new slot, in the run's directory there, and again when its inputs
   * change (`npm ci --prefer-offline`). A failure in the first slot fails the run before any model
   * call; in a later one, that attempt.
   */
  setup?: string | SetupOptions;
  /**
   * Slots (worktrees with their environment) are kept between runs in the cache directory, so the
   * next run starts in a ready one; these bound them. `false`: each run makes its own and removes
   * them at its end.
   */
  slots?: false | Partial<SlotLimits>;
}

export interface SetupOptions {
  command: string;
  /** Files whose change at an attempt's start makes it run again (globs). Default: lockfiles. */
  inputs?: readonly string[];
  /** Default 10 minutes. */
  timeoutMs?: number;
}

/**
 * The workspace provider that isolates: in a git repository each attempt works in its own
 * worktree, completed work is merged into the run's branch and applied at the end. `auto` falls
 * back to a shared directory (with a notice) outside a repository, without git, or on a detached
 * HEAD; `worktree` refuses those with a `WorkspaceError`.
 */
export function gitWorkspaces(options: GitWorkspaceOptions = {}): WorkspaceProvider {
  const environment = environmentSettings(options);
  const limits = slotLimits(options.slots);
  return { isolates: true, open: (input) => openGitWorkspace(input, environment, limits) };
}

function slotLimits(given: GitWorkspaceOptions["slots"]): SlotLimits | false {
  if (given === false) return false;
  const limits = { ...defaultSlotLimits, ...given };
  for (const [name, value] of Object.entries(limits)) {
    if (typeof value !== "number" || !(value >= 0) || !Number.isFinite(value)) {
      throw new InvalidConfigError(
        `\`slots.${name}\` must be a number of 0 or more; got ${value}.`,
      );
    }
  }
  return limits;
}

function environmentSettings(options: GitWorkspaceOptions): EnvironmentSettings {
  const setup = typeof options.setup === "string" ? { command: options.setup } : options.setup;
  if (setup && (typeof setup.command !== "string" || setup.command.trim() === "")) {
    throw new InvalidConfigError("`setup` must be a non-empty shell command.");
  }
  const timeoutMs = setup?.timeoutMs ?? defaultSetupTimeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidConfigError(
      `\`setup.timeoutMs\` must be a positive number; got ${timeoutMs}.`,
    );
  }
  return {
    dependencies: options.dependencies ?? true,
    include: [...(options.include ?? [])],
    ...(setup
      ? {
          setup: {
            command: setup.command,
            inputs: [...(setup.inputs ?? defaultSetupInputs)],
            timeoutMs,
          },
        }
      : {}),
  };
}

async function openGitWorkspace(
  input: OpenWorkspaceInput,
  environment: EnvironmentSettings,
  limits: SlotLimits | false,
): Promise<RunWorkspace> {
  if (input.isolation === "shared" && !input.recorded)
    return watchOutside(sharedWorkspace(input.cwd), input.cwd, input.abortSignal);
  // Git's helper process is started now and kept while the run has worktrees: its busiest moments
  // (the first slots, a wave of merges) find it up.
  const release = holdGitRunner();
  try {
    const workspace = await openIsolated(input, environment, limits);
    if (workspace.record.kind !== "worktree") {
      release();
      return workspace;
    }
    const close = workspace.close.bind(workspace);
    workspace.close = () => close().finally(release);
    return workspace;
  } catch (error) {
    release();
    throw error;
  }
}

async function openIsolated(
  input: OpenWorkspaceInput,
  environment: EnvironmentSettings,
  limits: SlotLimits | false,
): Promise<RunWorkspace> {
  const { runId, cwd, recorded } = input;
  if (recorded) {
    const record = recorded.record;
    // Logs written before workspaces existed ran shared.
    if (record?.kind !== "worktree") return watchOutside(sharedWorkspace(cwd), cwd);
    return openWorktreeWorkspace(runId, record, recorded.tip ?? record.base, limits, input.sandbox);
  }
  let repo: Awaited<ReturnType<typeof findRepository>>;
  try {
    repo = await findRepository(cwd, input.abortSignal);
  } catch (error) {
    const fallback = input.isolation === "auto" && WorkspaceError.isInstance(error);
    if (fallback && error.reason === "git-missing")
      return sharedWorkspace(cwd, "git was not found: attempts share the working directory.");
    // A CI checkout is a detached HEAD: no branch to leave the result on, so share the directory.
    if (fallback && error.reason === "detached-head")
      return watchOutside(
        sharedWorkspace(
          cwd,
          `${error.message.replace(/:.*$/, "")}: attempts share the directory, without isolation.`,
        ),
        cwd,
        input.abortSignal,
      );
    throw error;
  }
  if (!repo) {
    if (input.isolation === "worktree") {
      throw new WorkspaceError(
        "not-a-repository",
        `${cwd} is not in a git repository: worktree isolation needs one (run \`git init\`, or use isolation "shared").`,
      );
    }
    return sharedWorkspace(
      cwd,
      `${cwd} is not in a git repository: attempts share the directory, without isolation.`,
    );
  }
  const record = await startWorktreeRun(runId, repo, input.apply, environment, input.abortSignal);
  return openWorktreeWorkspace(runId, record, record.base, limits, input.sandbox, false);
}
