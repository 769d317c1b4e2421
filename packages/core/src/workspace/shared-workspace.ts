import { InvalidConfigError } from "../errors/errors.js";
import type {
  AttemptSpace,
  Integration,
  RunWorkspace,
  WorkspaceProvider,
} from "../ports/workspace.js";

/** Core's provider: every run shared; a run that logged worktrees cannot be resumed with it. */
export const sharedWorkspaces: WorkspaceProvider = {
  isolates: false,
  async open({ cwd, isolation, recorded }) {
    if (recorded?.record?.kind === "worktree") {
      throw new InvalidConfigError(
        "This run worked in git worktrees: resume it with a manager given `workspaces: gitWorkspaces()` from @taskledger/git-workspace (taskledger's createManager has it).",
      );
    }
    if (recorded) return sharedWorkspace(cwd);
    return isolation === "auto"
      ? sharedWorkspace(
          cwd,
          "This manager has no isolating workspace provider: attempts share the directory (taskledger's createManager gives each attempt a git worktree).",
        )
      : sharedWorkspace(cwd);
  },
};

/** The workspace of today: every attempt in the run's directory. */
export function sharedWorkspace(cwd: string, notice?: string): RunWorkspace {
  const space: AttemptSpace = {
    cwd,
    capture: async () => undefined,
    dispose: async () => {},
  };
  return {
    record: notice ? { kind: "shared", notice } : { kind: "shared" },
    attempt: async () => space,
    reword: async (commit) => commit,
    integrate: async ({ onMerged }) => {
      const integration: Integration = { merged: true, merge: "", filesChanged: [] };
      await onMerged(integration);
      return integration;
    },
    finish: async () => undefined,
    close: async () => {},
  };
}
