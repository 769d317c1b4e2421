export { cacheDirectory } from "./cache-directory.js";
export { type CleanOptions, type CleanResult, cleanRepository } from "./clean-repository.js";
export { type GitOptions, type GitResult, git, gitBytes, splitNul } from "./git.js";
export { commitDiff, findRepository, type GitRepository } from "./git-repository.js";
export { gitRunnerState, holdGitRunner } from "./git-runner.js";
export { type GitWorkspaceOptions, gitWorkspaces, type SetupOptions } from "./git-workspaces.js";
export {
  type ProjectDigestOptions,
  projectDigest,
  projectDigests,
} from "./project-digest.js";
export {
  defaultRunRefLimits,
  listRunRefs,
  pruneFinishedRuns,
  type RunRefLimits,
  type RunRefs,
  runRefs,
} from "./run-refs.js";
export {
  defaultSetupInputs,
  defaultSetupTimeoutMs,
  runSetupCommand,
  type SetupResult,
} from "./setup-command.js";
export { ignoredEntries, resetWorktree, setupInputsAt } from "./slot-environment.js";
export {
  defaultSlotLimits,
  type KeptSlot,
  type ListedSlot,
  poolDirectory,
  type SlotLimits,
} from "./slot-pool.js";
export { worktreeIncludeFile } from "./worktree-include.js";
