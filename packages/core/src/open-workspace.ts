import { WorkspaceError } from "./errors.js";
import { findRepository } from "./git-repository.js";
import { openWorktreeWorkspace, startWorktreeRun } from "./git-worktree-workspace.js";
import {
  type Isolation,
  type RunWorkspace,
  sharedWorkspace,
  type WorkspaceRecord,
} from "./workspace.js";

export interface OpenWorkspaceInput {
  runId: string;
  cwd: string;
  /** `auto`: worktrees when `cwd` is in a git repository, else shared with a notice. */
  isolation: Isolation | "auto";
  /** Apply the run's change to the user's tree at the end. */
  apply: boolean;
  /** A resumed run's workspace as its log tells it, with the run branch's logged tip. */
  recorded?: { record: WorkspaceRecord | undefined; tip: string | undefined };
  abortSignal?: AbortSignal;
}

/** Opens the workspace a run's attempts work in: new at a run's start, as logged on resume. */
export async function openWorkspace(input: OpenWorkspaceInput): Promise<RunWorkspace> {
  const { runId, cwd, recorded } = input;
  if (recorded) {
    const record = recorded.record;
    // Logs written before workspaces existed ran shared.
    if (record?.kind !== "worktree") return sharedWorkspace(cwd);
    return openWorktreeWorkspace(runId, record, recorded.tip ?? record.base);
  }
  if (input.isolation === "shared") return sharedWorkspace(cwd);
  let repo: Awaited<ReturnType<typeof findRepository>>;
  try {
    repo = await findRepository(cwd, input.abortSignal);
  } catch (error) {
    if (
      input.isolation === "auto" &&
      WorkspaceError.isInstance(error) &&
      error.reason === "git-missing"
    )
      return sharedWorkspace(cwd, "git was not found: attempts share the working directory.");
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
  const record = await startWorktreeRun(runId, repo, input.apply, input.abortSignal);
  return openWorktreeWorkspace(runId, record, record.base);
}
