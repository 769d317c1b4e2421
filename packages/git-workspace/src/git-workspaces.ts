import {
  type OpenWorkspaceInput,
  type RunWorkspace,
  sharedWorkspace,
  WorkspaceError,
  type WorkspaceProvider,
} from "@taskledger/core";
import { findRepository } from "./git-repository.js";
import { openWorktreeWorkspace, startWorktreeRun } from "./git-worktree-workspace.js";

/**
 * The workspace provider that isolates: in a git repository each attempt works in its own
 * worktree, completed work is merged into the run's branch and applied at the end. `auto` falls
 * back to a shared directory (with a notice) outside a repository, without git, or on a detached
 * HEAD; `worktree` refuses those with a `WorkspaceError`.
 */
export function gitWorkspaces(): WorkspaceProvider {
  return { isolates: true, open: openGitWorkspace };
}

async function openGitWorkspace(input: OpenWorkspaceInput): Promise<RunWorkspace> {
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
    const fallback = input.isolation === "auto" && WorkspaceError.isInstance(error);
    if (fallback && error.reason === "git-missing")
      return sharedWorkspace(cwd, "git was not found: attempts share the working directory.");
    // A CI checkout is a detached HEAD: no branch to leave the result on, so share the directory.
    if (fallback && error.reason === "detached-head")
      return sharedWorkspace(
        cwd,
        `${error.message.replace(/:.*$/, "")}: attempts share the directory, without isolation.`,
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
  const record = await startWorktreeRun(runId, repo, input.apply, input.abortSignal);
  return openWorktreeWorkspace(runId, record, record.base);
}
