import {
  createManager as createCoreManager,
  type Manager,
  type ManagerOptions,
} from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { gitWorkspaces, projectDigests } from "@taskledger/git-workspace";

/**
 * Core's `createManager`, except that given a `model` and no `evaluator` it judges attempts with
 * `@taskledger/evaluator` (checks first, then the LLM judge) instead of the finish reason alone,
 * that attempts work in git worktrees (`gitWorkspaces()`) unless `workspaces` says otherwise, and
 * that the planner gets the project's digest (`projectDigests()`) unless `project` is false.
 * Core cannot default to either itself: both packages depend on core.
 */
export function createManager(options: ManagerOptions): Manager {
  const evaluator =
    options.evaluator ?? (options.model ? createEvaluator({ model: options.model }) : undefined);
  return createCoreManager({
    ...options,
    ...(evaluator ? { evaluator } : {}),
    workspaces: options.workspaces ?? gitWorkspaces(),
    project: options.project ?? projectDigests(),
  });
}
