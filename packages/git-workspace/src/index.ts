export { type GitOptions, type GitResult, git, splitNul } from "./git.js";
export { commitDiff, findRepository, type GitRepository } from "./git-repository.js";
export { type GitWorkspaceOptions, gitWorkspaces, type SetupOptions } from "./git-workspaces.js";
export { runRefs } from "./git-worktree-workspace.js";
export { defaultSetupInputs } from "./setup-command.js";
export { worktreeIncludeFile } from "./worktree-include.js";
