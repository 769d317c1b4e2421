import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  defaultSetupInputs,
  git,
  gitBytes,
  ignoredEntries,
  resetWorktree,
  setupInputsAt,
} from "@taskledger/git-workspace";
import type { AttemptJobData } from "../job/attempt-job.js";

/** Where one attempt runs on a worker: a worktree of the worker's clone of the run's remote. */
export interface WorkerSlot {
  /** The worktree's top. */
  path: string;
  /** The run's directory inside it, where the agent works. */
  cwd: string;
  /** The bare clone it belongs to. */
  clone: string;
  /** What its environment (what the setup made) was made for; undefined until a setup ran. */
  setupKey?: string;
  /** Ignored paths the setup left: kept on reset while `setupKey` holds. */
  keep: string[];
  /** The commit the worktree was reset to after its last job (its work committed), if it was. */
  resetTo?: string | undefined;
}

// Worktrees kept for the next job, whatever the worker's concurrency.
const maxFreeSlots = 8;

/**
 * A worker's local clones: one bare repository per remote, fetched into per attempt, with a
 * worktree per running attempt, kept for the next job of that remote (reset to its start, the
 * setup's work kept while its lockfiles are the same). Only this worker process uses `workDir`.
 */
export class WorkerClones {
  private readonly clones = new Map<string, Promise<string>>();
  private readonly free: WorkerSlot[] = [];
  private readonly inputs = new Map<string, Promise<string>>();
  // `<clone>\0<commit>` of every start commit fetched into a clone.
  private readonly fetched = new Set<string>();
  private made = 0;
  // Worktree bookkeeping goes one at a time: git locks it.
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly workDir: string) {}

  /** A worktree at the job's start commit, fetched from its remote. */
  async checkout(
    job: AttemptJobData,
    jobId: string,
    abortSignal: AbortSignal,
  ): Promise<WorkerSlot> {
    const clone = await this.cloneOf(job.remote);
    // A commit fetched before is still there (taskledger's git never collects garbage): no fetch.
    // Fetched one at a time with worktree bookkeeping: a fetch's connectivity check reads every
    // worktree's HEAD, and one being added holds a placeholder ("bad object …/HEAD").
    const fetched = `${clone}\0${job.start}`;
    await this.serial(async () => {
      if (this.fetched.has(fetched)) return;
      await git(
        [
          "fetch",
          "-q",
          "--no-tags",
          "--no-write-fetch-head",
          job.remote,
          `+${job.startRef}:${job.startRef}`,
        ],
        { cwd: clone, abortSignal },
      );
      if (this.fetched.size >= 4096) this.fetched.clear();
      this.fetched.add(fetched);
    });
    // A slot already put back at this very commit comes first: it needs no git at all.
    const ready = this.free.findIndex((slot) => slot.clone === clone && slot.resetTo === job.start);
    const at = ready !== -1 ? ready : this.free.findIndex((slot) => slot.clone === clone);
    const kept = at === -1 ? undefined : this.free.splice(at, 1)[0];
    if (kept) {
      try {
        const resetTo = kept.resetTo;
        kept.resetTo = undefined;
        // Nothing kept from a setup: there is nothing its key could spare.
        const same =
          kept.setupKey !== undefined &&
          kept.setupKey === (await this.setupKey(kept, job, abortSignal));
        // Reset and cleaned after its last job, keeping what that job's setup left: the same
        // start needs nothing, another only the checkout (nothing untracked is there to clean).
        if (resetTo === undefined || (kept.setupKey !== undefined && !same))
          await resetWorktree(kept.path, job.start, same ? kept.keep : [], abortSignal);
        else if (resetTo !== job.start)
          await git(["checkout", "-q", "-f", "--detach", job.start], {
            cwd: kept.path,
            abortSignal,
          });
        if (!same) Object.assign(kept, { setupKey: undefined, keep: [] });
        const cwd = resolve(kept.path, job.prefix);
        await mkdir(cwd, { recursive: true });
        return { ...kept, cwd };
      } catch (error) {
        await this.remove(kept);
        if (abortSignal.aborted) throw error;
      }
    }
    const path = join(
      this.workDir,
      "attempts",
      `slot-${++this.made}-${jobId.replace(/[^\w.-]/g, "_")}`,
    );
    await this.serial(async () => {
      await rm(path, { recursive: true, force: true });
      // `--force` twice: a path an earlier worker left registered (its files gone) is taken over.
      await git(["worktree", "add", "-q", "--detach", "--force", "--force", path, job.start], {
        cwd: clone,
        abortSignal,
      });
    });
    const cwd = resolve(path, job.prefix);
    await mkdir(cwd, { recursive: true });
    return { path, cwd, clone, keep: [] };
  }

  /** What a setup made for `job` depends on: the command, where it runs, the lockfiles. */
  async setupKey(slot: WorkerSlot, job: AttemptJobData, abortSignal: AbortSignal): Promise<string> {
    // Asked up to three times a job (checkout, before and after the setup): listed once a commit.
    const at = `${slot.clone}\0${job.start}`;
    let listed = this.inputs.get(at);
    if (!listed) {
      listed = setupInputsAt(slot.clone, job.start, defaultSetupInputs, abortSignal);
      listed.catch(() => this.inputs.delete(at));
      if (this.inputs.size >= 64) this.inputs.clear();
      this.inputs.set(at, listed);
    }
    const inputs = await listed;
    return createHash("sha256")
      .update(JSON.stringify([job.setup?.command ?? "", job.prefix, inputs]))
      .digest("hex");
  }

  /** True when the slot holds what `job`'s setup would make: it need not run again. */
  async setUp(slot: WorkerSlot, job: AttemptJobData, abortSignal: AbortSignal): Promise<boolean> {
    return (
      slot.setupKey !== undefined && slot.setupKey === (await this.setupKey(slot, job, abortSignal))
    );
  }

  /**
   * Records that `job`'s setup ran in the slot: what it left is kept on later resets. A setup that
   * left files git does not ignore runs again each time (a reset removes those files).
   */
  async markSetUp(slot: WorkerSlot, job: AttemptJobData, abortSignal: AbortSignal): Promise<void> {
    const { stdout } = await git(["ls-files", "--others", "--exclude-standard", "-z"], {
      cwd: slot.path,
      abortSignal,
    });
    if (stdout !== "") return;
    slot.keep = await ignoredEntries(slot.path, abortSignal);
    slot.setupKey = await this.setupKey(slot, job, abortSignal);
  }

  /** Keeps a slot for the next job; past the bound it is removed. */
  async release(slot: WorkerSlot): Promise<void> {
    if (this.free.length >= maxFreeSlots) return this.remove(slot);
    this.free.push(slot);
  }

  /** Removes every kept slot (the worker is closing). */
  async close(): Promise<void> {
    await Promise.all(this.free.splice(0).map((slot) => this.remove(slot)));
  }

  /**
   * Everything the attempt changed as one commit on its start, pushed to the job's work ref. Returns
   * once the slot is back at its start (a next job from the same commit, a wave's usual case, takes
   * it without a reset); `pushed` settles once the commit is on the remote.
   */
  async commitAndPush(
    slot: WorkerSlot,
    job: AttemptJobData,
    message: string,
  ): Promise<{ commit: string; pushed: Promise<{ pack?: string }> }> {
    // No signal: a cancelled attempt's work is still kept, as it is locally.
    await git(["add", "-A", "--", "."], { cwd: slot.path });
    const tree = (await git(["write-tree"], { cwd: slot.path })).stdout.trim();
    const commit = (
      await git(["commit-tree", tree, "-p", job.start, "-m", message], { cwd: slot.path })
    ).stdout.trim();
    const push = () =>
      git(["push", "-q", "--force", job.remote, `${commit}:${job.workRef}`], {
        cwd: slot.clone,
      }).then(() => ({}));
    // A small change travels with the result (one git here, one there) instead of through the
    // remote (a push here, a fetch there: a dozen processes and a round trip); a larger one, or
    // a pack that could not be made, is pushed.
    const pushed = job.inlineWorkBytes
      ? packOf(slot.clone, commit, job.start, job.inlineWorkBytes).then(
          (pack) => (pack ? { pack } : push()),
          push,
        )
      : push();
    // Handled by whoever awaits it; never unhandled while the reset runs.
    pushed.catch(() => {});
    // The work is in the commit: the slot goes back to its start while the commit travels.
    await resetWorktree(
      slot.path,
      job.start,
      slot.setupKey === undefined ? [] : slot.keep,
      new AbortController().signal,
    ).then(
      () => {
        slot.resetTo = job.start;
      },
      () => {},
    );
    return { commit, pushed };
  }

  async remove(slot: WorkerSlot): Promise<void> {
    await this.serial(async () => {
      await git(["worktree", "remove", "--force", "--force", slot.path], {
        cwd: slot.clone,
        okCodes: [128],
      });
      await rm(slot.path, { recursive: true, force: true });
    });
  }

  private cloneOf(remote: string): Promise<string> {
    let clone = this.clones.get(remote);
    if (!clone) {
      const path = join(
        this.workDir,
        `${createHash("sha256").update(remote).digest("hex").slice(0, 16)}.git`,
      );
      clone = (async () => {
        // A clone an earlier worker left may list worktrees whose files are gone: pruned once.
        const earlier = existsSync(join(path, "worktrees"));
        await mkdir(path, { recursive: true });
        await git(["init", "-q", "--bare", path], { cwd: path });
        if (earlier) await git(["worktree", "prune"], { cwd: path });
        return path;
      })();
      this.clones.set(remote, clone);
      clone.catch(() => this.clones.delete(remote));
    }
    return clone;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }
}

/** The objects of `commit` that `start` lacks, as a thin pack in base64; undefined past `maxBytes`. */
async function packOf(
  clone: string,
  commit: string,
  start: string,
  maxBytes: number,
): Promise<string | undefined> {
  const packed = await gitBytes(["pack-objects", "--revs", "--thin", "--stdout", "-q"], {
    cwd: clone,
    input: `${commit}\n^${start}\n`,
    maxOutputBytes: maxBytes,
  }).catch(() => undefined);
  return packed?.stdout.toString("base64");
}
