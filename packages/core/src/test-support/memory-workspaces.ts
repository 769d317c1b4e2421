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
    async open({ runId, cwd, recorded }) {
      // A resumed run's branch is where its log says.
      let tip = recorded?.tip ?? "base";
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
        // The gate's merges: `at>commit`; a tree is the set of works merged, in any order.
        async merge({ at, commit }) {
          const merge = `${at}>${commit}`;
          return {
            merged: true,
            merge,
            filesChanged: ["f"],
            tree: worksIn(merge).sort().join("+"),
          };
        },
        async advance({ from, to }) {
          if (tip !== from) throw new Error(`the tip moved: ${tip}, not ${from}`);
          tip = to;
          for (const work of worksIn(to)) if (!merged.includes(work)) merged.push(work);
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

/** The works a gate's merge commit holds (`base>a@1>b@1`). */
export const worksIn = (commit: string): string[] =>
  commit.split(">").filter((work) => work !== "base" && !work.startsWith("merge:"));

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
