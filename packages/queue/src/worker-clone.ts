import { createHash } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { git } from "@taskledger/git-workspace";
import type { AttemptJobData } from "./attempt-job.js";

/** Where one attempt runs on a worker: a worktree of the worker's clone of the run's remote. */
export interface WorkerSlot {
  /** The worktree's top. */
  path: string;
  /** The run's directory inside it, where the agent works. */
  cwd: string;
  /** The bare clone it belongs to. */
  clone: string;
}

/**
 * A worker's local clones: one bare repository per remote, fetched into per attempt, with a
 * worktree per running attempt. Only this worker process uses `workDir`.
 */
export class WorkerClones {
  private readonly clones = new Map<string, Promise<string>>();
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
    const path = join(this.workDir, "attempts", jobId.replace(/[^\w.-]/g, "_"));
    await this.serial(async () => {
      await rm(path, { recursive: true, force: true });
      await git(["worktree", "prune"], { cwd: clone });
      await git(["worktree", "add", "-q", "--detach", "--force", path, job.start], {
        cwd: clone,
        abortSignal,
      });
    });
    const cwd = resolve(path, job.prefix);
    await mkdir(cwd, { recursive: true });
    return { path, cwd, clone };
  }

  /** Everything the attempt changed as one commit on its start, pushed to the job's work ref. */
  async commitAndPush(slot: WorkerSlot, job: AttemptJobData, message: string): Promise<string> {
    // No signal: a cancelled attempt's work is still kept, as it is locally.
    await git(["add", "-A", "--", "."], { cwd: slot.path });
    const tree = (await git(["write-tree"], { cwd: slot.path })).stdout.trim();
    const commit = (
      await git(["commit-tree", tree, "-p", job.start, "-m", message], { cwd: slot.path })
    ).stdout.trim();
    await git(["push", "-q", "--force", job.remote, `${commit}:${job.workRef}`], {
      cwd: slot.clone,
    });
    return commit;
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
        await mkdir(path, { recursive: true });
        await git(["init", "-q", "--bare", path], { cwd: path });
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
