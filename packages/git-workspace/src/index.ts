export { type GitOptions, type GitResult, git, splitNul } from "./git.js";
export { commitDiff, findRepository, type GitRepository } from "./git-repository.js";
export { type GitWorkspaceOptions, gitWorkspaces, type SetupOptions } from "./git-workspaces.js";
export { runRefs } from "./git-worktree-workspace.js";
export {
  defaultSetupInputs,
  defaultSetupTimeoutMs,
  runSetupCommand,
  type SetupResult,
} from "./setup-command.js";
export { worktreeIncludeFile } from "./worktree-include.js";
