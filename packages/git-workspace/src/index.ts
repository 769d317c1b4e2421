export { cacheDirectory } from "./cache-directory.js";
export { type CleanOptions, type CleanResult, cleanRepository } from "./clean-repository.js";
export {
  type ProjectDigestOptions,
  projectDigest,
  projectDigests,
} from "./digest/build-project-digest.js";
export { type GitOptions, type GitResult, git, gitBytes, splitNul } from "./git/git.js";
export { commitDiff, findRepository, type GitRepository } from "./git/git-repository.js";
export { gitRunnerState, holdGitRunner } from "./git/git-runner.js";
export {
  defaultRunRefLimits,
  listRunRefs,
  pruneFinishedRuns,
  type RunRefLimits,
  type RunRefs,
  runRefs,
} from "./git/run-refs.js";
export { type GitWorkspaceOptions, gitWorkspaces, type SetupOptions } from "./git-workspaces.js";
export {
  defaultSetupInputs,
  defaultSetupTimeoutMs,
  runSetupCommand,
  type SetupResult,
} from "./slots/setup-command.js";
export { ignoredEntries, resetWorktree, setupInputsAt } from "./slots/slot-environment.js";
export {
  defaultSlotLimits,
  type KeptSlot,
  type ListedSlot,
  poolDirectory,
  type SlotLimits,
} from "./slots/slot-pool.js";
export { worktreeIncludeFile } from "./slots/worktree-include.js";
