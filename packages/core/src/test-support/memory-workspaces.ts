// The manager's collaborator for core's best-of tests, in memory. Not part of the package.

import type { RunEvent, RunEventOf } from "../log/run-events.js";
import type { AttemptResult } from "../ports/executor.js";
import type { Integration, RunWorkspace, WorkspaceProvider } from "../ports/workspace.js";
import { emptyUsage } from "../usage/usage.js";

/**
 * The manager's collaborator, in memory: attempts "work" in the run's directory and their work is
 * a named commit, so the scheduler's part of best-of is what these tests see (the git side is in
 * @taskledger/git-workspace's and the CLI's tests).
 */
export function memoryWorkspaces(
  beforeAttempt?: (subTaskId: string) => Promise<void>,
  unreadable?: (commit: string) => boolean,
) {
  const merged: string[] = [];
  const kept: string[] = [];
  const provider: WorkspaceProvider = {
    isolates: true,
    async open({ runId, cwd }) {
      let tip = "base";
      const trees = new Map<string, string>();
      const treeOf = (commit: string) => (trees.get(commit) ?? "").split("+").filter(Boolean);
      const workspace: RunWorkspace = {
        record: {
          kind: "worktree",
          root: cwd,
          prefix: "",
          base: "base",
          branch: `b/${runId}`,
          apply: false,
        },
        async attempt({ subTaskId, attempt }) {
          await beforeAttempt?.(subTaskId);
          return {
            cwd,
            capture: async () => ({ commit: `${subTaskId}@${attempt}`, filesChanged: ["f"] }),
            dispose: async () => {},
          };
        },
        reword: async (commit) => commit,
        async integrate({ commit, onMerged }) {
          merged.push(commit);
          tip = `merge:${commit}`;
          const integration: Integration = { merged: true, merge: tip, filesChanged: ["f"] };
          await onMerged(integration);
          return integration;
        },
        // The gate's merges: a tree is the set of works merged, so the same set is the same tree.
        async merge({ at, commit }) {
          const tree = [...new Set([...treeOf(at), commit])].sort().join("+");
          const merge = `${at}>${commit}`;
          trees.set(merge, tree);
          return { merged: true, merge, filesChanged: ["f"], tree };
        },
        async advance({ from, to }) {
          if (tip !== from) throw new Error(`the tip moved: ${tip}, not ${from}`);
          tip = to;
          for (const work of treeOf(to)) if (!merged.includes(work)) merged.push(work);
        },
        finish: async () => undefined,
        close: async () => {},
        async diff({ commit }) {
          if (unreadable?.(commit)) throw new Error(`bad object ${commit}`);
          return { text: `+ the work of ${commit}`, linesChanged: 1 };
        },
        async keep({ subTaskId, attempt }) {
          const ref = `refs/taskledger/${runId}/attempts/${subTaskId}/${attempt}`;
          kept.push(ref);
          return ref;
        },
      };
      return workspace;
    },
  };
  return { provider, merged, kept };
}

export const finishedResult = (): AttemptResult => ({
  outcome: "finished",
  finalText: "done",
  toolCalls: [],
  stepFinishReasons: ["stop"],
  filesChanged: [],
  usage: emptyUsage(),
  durationMs: 1,
});

export const of = <K extends RunEvent["type"]>(records: readonly RunEvent[], type: K) =>
  records.filter((r): r is RunEventOf<K> => r.type === type);
