import {
  createManager,
  FileRunStore,
  type RunReport,
  type TaskLedgerInput,
} from "@taskledger/core";
import { createFakeExecutor, type FakeAttempt } from "@taskledger/testing";

/** A stored run made by the real manager with a host plan and a fake executor. */
export async function storeRun(
  store: string,
  request: string,
  plan: TaskLedgerInput,
  attempt: FakeAttempt | ((subTaskId: string) => FakeAttempt) = { type: "success", text: "done" },
  host: Record<string, unknown> = { provider: "openai", model: "m", agentModel: "openai/a" },
): Promise<RunReport> {
  const manager = createManager({
    cwd: process.cwd(),
    executor: createFakeExecutor({
      script: ({ subTaskId }) => (typeof attempt === "function" ? attempt(subTaskId) : attempt),
    }),
    store: new FileRunStore(store),
    maxSubTasks: plan.subTasks.length,
    concurrency: 8,
  });
  return manager.run(request, { plan, settings: { host } });
}

/** A chain-and-fan plan of `count` sub-tasks: each depends on one or two before it. */
export function widePlan(count: number): TaskLedgerInput {
  return {
    subTasks: Array.from({ length: count }, (_, i) => ({
      id: `s${i + 1}`,
      title: `Step ${i + 1}`,
      description: `Do step ${i + 1}.`,
      successCriteria: [`step ${i + 1} is done`],
      dependsOn:
        i === 0 ? [] : i < 8 ? ["s1"] : [`s${i - 7}`, ...(i % 3 === 0 ? [`s${i - 1}`] : [])],
    })),
  };
}
