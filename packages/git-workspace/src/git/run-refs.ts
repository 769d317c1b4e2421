import { git } from "./git.js";

/** The refs of one run: its tip, its base and every attempt's commit, out of `git branch`'s way. */
export function runRefs(runId: string) {
  const root = `refs/taskledger/${runId}`;
  return {
    root,
    tip: `${root}/tip`,
    base: `${root}/base`,
    /** Made when the run ends (not when it is cancelled: that one may resume). */
    finished: `${root}/finished`,
    attempt: (subTaskId: string, attempt: number) =>
      `${root}/attempts/${subTaskId.replace(/\./g, "%2E")}/${attempt}`,
  };
}

/** How long an ended run's refs are kept; its branch `taskledger/<run>` stays until the user deletes it. */
export interface RunRefLimits {
  /** The refs of at most this many ended runs are kept, the most recent. Default 10. */
  keepRuns: number;
  /** And none older than this. Default 7 days. */
  keepMs: number;
}

export const defaultRunRefLimits: RunRefLimits = {
  keepRuns: 10,
  keepMs: 7 * 24 * 60 * 60 * 1000,
};

/** A run that has refs in the repository. */
export interface RunRefs {
  runId: string;
  refs: number;
  /** When it ended; undefined while it runs or can be resumed. */
  finishedAt?: Date;
}

/**
 * Marks a run as ended: a commit of nothing, dated now, under its refs. Its empty tree is written
 * (`mktree`): git reads the empty tree without it, but `git fsck` calls a commit naming an unwritten
 * one broken, and the run's refs keep the marker.
 */
export async function markFinished(root: string, runId: string): Promise<void> {
  const empty = (await git(["mktree"], { cwd: root, input: "" })).stdout.trim();
  const marker = (
    await git(["commit-tree", empty, "-m", `taskledger: run ${runId} ended`], { cwd: root })
  ).stdout.trim();
  await git(["update-ref", runRefs(runId).finished, marker], { cwd: root });
}

/** Every run with refs here, the most recently ended first, then those not ended. */
export async function listRunRefs(root: string, abortSignal?: AbortSignal): Promise<RunRefs[]> {
  const { stdout } = await git(
    ["for-each-ref", "--format=%(refname)%00%(committerdate:unix)", "refs/taskledger/"],
    { cwd: root, abortSignal },
  );
  const runs = new Map<string, RunRefs>();
  for (const line of stdout.split("\n")) {
    const [name = "", date = ""] = line.split("\0");
    const match = /^refs\/taskledger\/([^/]+)\/(.+)$/.exec(name);
    if (!match) continue;
    const runId = match[1]!;
    const run = runs.get(runId) ?? { runId, refs: 0 };
    run.refs++;
    if (match[2] === "finished") run.finishedAt = new Date(Number(date) * 1000);
    runs.set(runId, run);
  }
  return [...runs.values()].sort(
    (a, b) => (b.finishedAt?.getTime() ?? 0) - (a.finishedAt?.getTime() ?? 0),
  );
}

/** Deletes every ref of a run (its branch `taskledger/<run>` is not one of them). */
export async function removeRunRefs(
  root: string,
  runId: string,
  abortSignal?: AbortSignal,
): Promise<number> {
  const { stdout } = await git(["for-each-ref", "--format=%(refname)", `${runRefs(runId).root}/`], {
    cwd: root,
    abortSignal,
  });
  const names = stdout.split("\n").filter((name) => name !== "");
  if (names.length === 0) return 0;
  await git(["update-ref", "--stdin"], {
    cwd: root,
    input: names.map((name) => `delete ${name}\n`).join(""),
    abortSignal,
  });
  return names.length;
}

/**
 * Removes the refs of ended runs beyond the limits (older than `keepMs`, or past the `keepRuns`
 * most recent). Runs not ended (running, or interrupted and resumable) are never touched.
 * Returns the runs whose refs went.
 */
export async function pruneFinishedRuns(
  root: string,
  limits: RunRefLimits = defaultRunRefLimits,
  abortSignal?: AbortSignal,
): Promise<RunRefs[]> {
  const now = Date.now();
  const ended = (await listRunRefs(root, abortSignal)).filter((run) => run.finishedAt);
  const removed: RunRefs[] = [];
  for (const [index, run] of ended.entries()) {
    if (index < limits.keepRuns && now - run.finishedAt!.getTime() <= limits.keepMs) continue;
    await removeRunRefs(root, run.runId, abortSignal);
    removed.push(run);
  }
  return removed;
}
