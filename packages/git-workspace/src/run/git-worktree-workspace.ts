import { mkdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type AttemptCapture,
  type AttemptSpace,
  type EnvironmentSettings,
  type Integration,
  type RunWorkspace,
  type Sandbox,
  type SlotPreparation,
  WorkspaceError,
} from "@taskledger/core";
import { git } from "../git/git.js";
import { changedPaths, commitDiff, commitHeader, linesChanged } from "../git/git-repository.js";
import { markFinished, pruneFinishedRuns, runRefs } from "../git/run-refs.js";
import { type EnvironmentSlot, SlotEnvironment } from "../slots/slot-environment.js";
import { type KeptSlot, type SlotLimits, SlotPool } from "../slots/slot-pool.js";
import { captureAttempt } from "./capture-attempt.js";
import { finishRun } from "./finish-run.js";
import { keepInside } from "./outside-changes.js";
import { removeStale, type WorktreeRecord, worktreesDir } from "./worktree-run.js";

// Logs from before environments: slots get the dependencies found, nothing else.
const environmentOfOldLogs: EnvironmentSettings = { dependencies: true, include: [] };

type Slot = EnvironmentSlot;

// Slots made ready ahead of the first attempts, whatever the concurrency.
const maxWarmSlots = 8;

/**
 * Opens a run's worktree workspace at `tip` (its base when new). On resume (`resumed`) the tip ref
 * is put back where the log says (a merge the log never recorded is undone, so it is made once)
 * and worktrees a stopped process left are removed; a new run, just started, has neither.
 */
export async function openWorktreeWorkspace(
  runId: string,
  record: WorktreeRecord,
  loggedTip: string,
  limits: SlotLimits | false,
  sandbox?: Sandbox,
  resumed = true,
): Promise<RunWorkspace> {
  let tip = loggedTip;
  const { root } = record;
  const refs = runRefs(runId);
  const dir = worktreesDir(runId);
  const live = new Set<string>();
  // Slots kept between runs come from the repository's pool; without one, each run makes its own.
  const pool = limits === false ? undefined : await SlotPool.open(root, limits);
  const keptOf = new Map<string, KeptSlot>();
  // Worktree bookkeeping and merges go one at a time: git locks them, and merges must chain.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = chain.then(work, work);
    chain = next.catch(() => {});
    return next;
  };
  const removeWorktree = (path: string) =>
    serial(async () => {
      const kept = keptOf.get(path);
      if (pool && kept) await pool.remove(kept);
      else {
        await git(["worktree", "remove", "--force", "--force", path], {
          cwd: root,
          okCodes: [128],
        });
        await rm(path, { recursive: true, force: true });
      }
      live.delete(path);
      slotOf.delete(path);
      keptOf.delete(path);
      untouchedAt.delete(path);
    });
  // Slots an attempt of this run worked in (`used`) are the next run's first: their agents are warm.
  const used = new Set<string>();
  // Back to the pool with the environment they hold; one never prepared is no use to keep.
  const releaseSlots = async (paths: readonly string[]) => {
    const back: { slot: KeptSlot; used: boolean }[] = [];
    const removed: Promise<void>[] = [];
    for (const path of paths) {
      const kept = keptOf.get(path);
      const slot = slotOf.get(path);
      if (!pool || !kept || slot?.key === undefined) {
        removed.push(removeWorktree(path));
        continue;
      }
      for (const map of [live, slotOf, keptOf]) map.delete(path);
      back.push({ slot: { ...kept, key: slot.key, keep: slot.keep }, used: used.has(path) });
    }
    await Promise.all([...removed, pool?.releaseAll(back)]);
  };

  if (resumed) await git(["update-ref", refs.tip, tip], { cwd: root });
  await removeStale(root, runId, resumed);

  const environment = new SlotEnvironment(
    root,
    record.prefix,
    runId,
    record.environment ?? environmentOfOldLogs,
    sandbox,
  );
  const preparations: SlotPreparation[] = [];
  // Slots at a commit with nothing of an attempt in them: just made, or reset and not taken since.
  // Not with a setup command, which may change tracked files that a reset puts back.
  const untouchedAt = new Map<string, string>();
  const untouched = (path: string, start: string) => {
    if (!environment.settings.setup) untouchedAt.set(path, start);
  };
  // Worktrees are reused across attempts ("slots"): resetting one to another commit rewrites only
  // the files that differ, where a new worktree writes every file of the repository; and the
  // environment (copied dependencies, setup) is kept while the lockfiles stay the same.
  const free: Slot[] = [];
  const slotOf = new Map<string, Slot>();
  let slots = 0;
  const ready = async (
    slot: Slot,
    key: string,
    abortSignal: AbortSignal,
    earlier?: number,
  ): Promise<Slot> => {
    try {
      const preparation = await environment.prepare(slot, key, abortSignal);
      if (preparation) preparations.push(preparation);
      else if (earlier !== undefined) {
        // A slot an earlier run left, its environment still right: said once, like a new one.
        preparations.push({
          slot: slot.index,
          reason: "reused",
          dependencies: [],
          included: [],
          includedCount: 0,
          durationMs: Math.round(performance.now() - earlier),
        });
      }
      return slot;
    } catch (error) {
      // Half an environment is no environment: the next attempt gets a new slot.
      await removeWorktree(slot.path);
      throw error;
    }
  };
  const newSlot = async (start: string, key: string, abortSignal: AbortSignal) => {
    const slot = await serial(async () => {
      const index = ++slots;
      const kept = pool ? await pool.create(runId) : undefined;
      const path = kept?.path ?? join(dir, `slot-${index}`);
      try {
        await rm(path, { recursive: true, force: true });
        await mkdir(kept ? pool!.dir : dir, { recursive: true });
        // `--force` twice: a path git still lists (its files removed, even locked) is taken over.
        await git(["worktree", "add", "--detach", "--force", "--force", path, start], {
          cwd: root,
          abortSignal,
        });
      } catch (error) {
        if (kept) await pool!.remove(kept);
        throw error;
      }
      live.add(path);
      untouched(path, start);
      if (kept) keptOf.set(path, kept);
      const made: Slot = { path, index, key: undefined, keep: [] };
      slotOf.set(path, made);
      return made;
    });
    return ready(slot, key, abortSignal);
  };
  // A slot an earlier run kept, held by this run until it ends.
  const keptSlot = async (key: string): Promise<Slot | undefined> => {
    const kept = await pool?.take(key, runId);
    if (!kept) return undefined;
    const slot: Slot = { path: kept.path, index: ++slots, key: kept.key, keep: kept.keep };
    live.add(kept.path);
    keptOf.set(kept.path, kept);
    slotOf.set(kept.path, slot);
    return slot;
  };
  const acquireSlot = async (start: string, abortSignal: AbortSignal): Promise<Slot> => {
    const started = performance.now();
    // Taken before any wait, so two attempts starting together never both count on one.
    let reused = free.pop();
    const earlier = reused ? undefined : started;
    let key: string;
    try {
      key = await environment.keyAt(start, abortSignal);
    } catch (error) {
      if (reused) free.push(reused);
      throw error;
    }
    reused ??= await keptSlot(key);
    if (reused === undefined) return newSlot(start, key, abortSignal);
    try {
      // Exactly the commit, as a new worktree would be: no file of an earlier attempt (or run)
      // survives, except the environment, which is made again when the lockfiles change. One
      // made or reset at this commit that no attempt has had since is that already.
      if (untouchedAt.get(reused.path) !== start || reused.key !== key) {
        await environment.reset(reused, start, key, abortSignal);
        untouched(reused.path, start);
      }
    } catch (error) {
      await removeWorktree(reused.path);
      if (abortSignal.aborted) throw error;
      return newSlot(start, key, abortSignal);
    }
    return ready(reused, key, abortSignal, earlier);
  };
  // Commits this run's captures made: rewording one needs no git to read it back.
  const made = new Map<string, { tree: string; parents: string[] }>();
  // Slots being made ready in the background, before any attempt asks for them.
  const warming = new Set<Promise<void>>();
  let preferred: Promise<void> | undefined;
  const takeSlot = async (start: string, abortSignal: AbortSignal): Promise<Slot> => {
    // One being made is nearer than a new one; the most recently used first.
    if (free.length === 0 && preferred && warming.has(preferred)) await preferred;
    while (free.length === 0 && warming.size > 0) await Promise.race(warming);
    return acquireSlot(start, abortSignal);
  };

  /** `commit` merged onto `at` as a new commit, the run's branch left where it is. */
  const mergeOnto = async (
    at: string,
    subTaskId: string,
    title: string,
    commit: string,
  ): Promise<Integration> => {
    const result = await git(["merge-tree", "--write-tree", "--name-only", "-z", at, commit], {
      cwd: root,
      okCodes: [1],
    });
    const fields = result.stdout.split("\0");
    // Captures keep only the run's directory; a commit of an older log may hold more.
    const { tree } = await keepInside(root, at, fields[0]!.trim(), record.prefix);
    if (result.code === 1) {
      const end = fields.indexOf("", 1);
      return {
        merged: false,
        conflicts: [...new Set(fields.slice(1, end === -1 ? undefined : end))],
      };
    }
    const merge = (
      await git(
        ["commit-tree", tree, "-p", at, "-p", commit, "-m", `Merge ${subTaskId}: ${title}`],
        {
          cwd: root,
        },
      )
    ).stdout.trim();
    const [filesChanged, own] = await Promise.all([
      changedPaths(root, at, merge),
      git(["rev-parse", `${commit}^{tree}`], { cwd: root }),
    ]);
    return { merged: true, merge, filesChanged, tree, ownTree: own.stdout.trim() === tree };
  };
  const workspace: RunWorkspace = {
    record,
    async prepare(abortSignal) {
      // The first slot, made before any model call: a broken setup is found for free.
      const slot = await takeSlot(tip, abortSignal);
      free.push(slot);
    },

    warm(count, abortSignal) {
      const missing = Math.min(count, maxWarmSlots) - live.size - warming.size;
      for (let i = 0; i < missing; i++) {
        // The one `prepare` took (most recently used, its agent warm) goes back on top; others under.
        const fromFree = free.length > 0;
        const job: Promise<void> = acquireSlot(tip, abortSignal)
          .then((slot) => void free.splice(fromFree ? free.length : 0, 0, slot))
          // An attempt that needs a slot meets the failure itself.
          .catch(() => {})
          .finally(() => warming.delete(job));
        if (fromFree) preferred = job;
        warming.add(job);
      }
    },

    takePreparations() {
      return preparations.splice(0);
    },

    async attempt({ subTaskId, attempt, from }, abortSignal) {
      const start = from ?? tip;
      const slot = await takeSlot(start, abortSignal);
      const path = slot.path;
      used.add(path);
      untouchedAt.delete(path);
      const cwd = resolve(path, record.prefix);
      await mkdir(cwd, { recursive: true });
      let disposed = false;
      const space: AttemptSpace = {
        cwd,
        async capture(message): Promise<AttemptCapture> {
          const { tree, ...captured } = await captureAttempt({
            root,
            path,
            start,
            prefix: record.prefix,
            never: await environment.neverCommitted(),
            message,
            ref: refs.attempt(subTaskId, attempt),
          });
          made.set(captured.commit, { tree, parents: ["-p", start] });
          return captured;
        },
        async dispose() {
          if (disposed) return;
          disposed = true;
          const kept = slotOf.get(path);
          if (live.has(path) && kept) free.push(kept);
        },
      };
      return space;
    },

    async reword(commit, message) {
      const known = made.get(commit);
      made.delete(commit);
      const { tree, parents } = known ?? (await commitHeader(root, commit));
      return (
        await git(["commit-tree", tree, ...parents, "-m", message], { cwd: root })
      ).stdout.trim();
    },

    integrate({ subTaskId, title, commit, onMerged }) {
      return serial(async (): Promise<Integration> => {
        const at = tip;
        const integration = await mergeOnto(at, subTaskId, title, commit);
        if (integration.merged) {
          // Compare-and-swap: the ref must still be where the log says, or nothing is written.
          await git(["update-ref", refs.tip, integration.merge, at], { cwd: root });
          tip = integration.merge;
        }
        await onMerged(integration);
        return integration;
      });
    },

    merge({ at, subTaskId, title, commit }) {
      return mergeOnto(at, subTaskId, title, commit);
    },

    advance({ from, to }) {
      return serial(async () => {
        if (tip !== from) {
          throw new WorkspaceError(
            "git-failed",
            `The run's branch moved (${tip.slice(0, 12)}), not at ${from.slice(0, 12)}: nothing landed.`,
          );
        }
        await git(["update-ref", refs.tip, to, from], { cwd: root });
        tip = to;
      });
    },

    async diff({ from, commit, maxChars }, abortSignal) {
      // A candidate's commit has the round's start as its parent: its own patch is the change.
      const [text, lines] = await Promise.all([
        commitDiff(root, commit, maxChars, abortSignal, from),
        linesChanged(root, from, commit, abortSignal),
      ]);
      return { text, linesChanged: lines };
    },

    async keep({ subTaskId, attempt, commit }) {
      const ref = refs.attempt(subTaskId, attempt);
      await git(["update-ref", ref, commit], { cwd: root });
      return ref;
    },

    async finish({ apply }) {
      // The slots go back while the branch and refs are written: neither touches the other.
      const [ended, closed] = await Promise.allSettled([
        (async () => {
          const outcome = await finishRun(record, tip, apply);
          // Only an ended run's refs may go: a running or resumable one's are never touched.
          await markFinished(root, runId);
          await pruneFinishedRuns(root).catch(() => undefined);
          return outcome;
        })(),
        workspace.close(),
      ]);
      if (ended.status === "rejected") throw ended.reason;
      if (closed.status === "rejected") throw closed.reason;
      return ended.value;
    },

    close() {
      // A failed close is tried again by the next call.
      closing ??= closeSlots().catch((error: unknown) => {
        closing = undefined;
        throw error;
      });
      return closing;
    },
  };
  // Closed once: `finish` closes, and the run closes again on its way out.
  let closing: Promise<void> | undefined;
  const closeSlots = async () => {
    await Promise.all(warming);
    free.length = 0;
    // Kept slots go back to the pool; the rest, under `dir`, go below at once (one prune).
    await releaseSlots([...live].filter((path) => keptOf.has(path)));
    await pool?.prune().catch(() => undefined);
    await serial(async () => {
      await rm(dir, { recursive: true, force: true });
      await git(["worktree", "prune"], { cwd: root });
    });
  };
  return workspace;
}
