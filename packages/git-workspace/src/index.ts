export { type GitOptions, type GitResult, git, splitNul } from "./git.js";
export { commitDiff, findRepository, type GitRepository } from "./git-repository.js";
export { gitWorkspaces } from "./git-workspaces.js";
export { runRefs } from "./git-worktree-workspace.js";
