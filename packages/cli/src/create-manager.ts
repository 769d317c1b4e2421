import {
  createManager as createCoreManager,
  type Manager,
  type ManagerOptions,
} from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";

/**
 * Core's `createManager`, except that given a `model` and no `evaluator` it judges attempts with
 * `@taskledger/evaluator` (checks first, then the LLM judge) instead of the finish reason alone.
 * Core cannot default to it itself: the evaluator package depends on core.
 */
export function createManager(options: ManagerOptions): Manager {
  const evaluator =
    options.evaluator ?? (options.model ? createEvaluator({ model: options.model }) : undefined);
  return createCoreManager(evaluator ? { ...options, evaluator } : options);
}
