import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { currentProcess, isHolderAlive } from "@taskledger/core";
import { cacheDirectory } from "../cache-directory.js";
import { git } from "../git/git.js";
import { killLeftoverSetup } from "./setup-command.js";

/** How many worktree slots a repository keeps between runs, and for how long. */
export interface SlotLimits {
  /** Slots kept (held ones count); beyond it the least recently used free ones go. Default 8. */
  maxSlots: number;
  /** Disk the kept slots may take, in bytes (as `du` counts it). Default 10 GiB. */
  maxBytes: number;
  /** A slot unused this long is removed. Default 7 days. */
  maxAgeMs: number;
}

export const defaultSlotLimits: SlotLimits = {
  maxSlots: 8,
  maxBytes: 10 * 1024 ** 3,
  maxAgeMs: 7 * 24 * 60 * 60 * 1000,
};

/** What a kept slot's file says of it. */
export interface KeptSlot {
  name: string;
  /** The worktree's top. */
  path: string;
  /** The environment key it was last prepared for; undefined when it never was. */
  key?: string;
  /** Ignored paths of its environment, kept on reset while `key` holds. */
  keep: string[];
  createdAt: number;
  lastUsed: number;
  /** Its size on disk when last measured (for `key`'s environment). */
  bytes?: number;
  measuredKey?: string;
}

/** A kept slot as a listing shows it: who holds it, if anyone. */
export interface ListedSlot extends KeptSlot {
  heldBy?: { pid: number; runId: string };
}

interface Holder {
  pid: number;
  /** Its process's start time: a pid given again to another process holds nothing. */
  startTime?: string;
  runId: string;
}

// Lock files this process holds: one naming this pid but not listed here was left by a run of this
// process that failed without letting go.
const heldHere = new Set<string>();

const slotFile = /^(slot-[0-9a-f]+)\.json$/;

/**
 * The worktree slots one repository keeps between runs, in the cache directory (outside the
 * repository: `git status` and `git branch` never show them). A slot is held by one run at a time
 * through an exclusive lock file naming its process; a lock whose process is gone is taken over.
 */
export class SlotPool {
  private constructor(
    /** Where the slots and their files are. */
    readonly dir: string,
    /** The repository's top, where worktrees are registered. */
    readonly root: string,
    readonly limits: SlotLimits,
  ) {}

  /** The pool of the repository whose top is `root`, made when missing. */
  static async open(root: string, limits: SlotLimits = defaultSlotLimits): Promise<SlotPool> {
    const dir = await poolDirectory(root);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "pool.json"), `${JSON.stringify({ root })}\n`);
    await removeOrphanPools(dirname(dir));
    return new SlotPool(dir, root, limits);
  }

  /**
   * A kept slot for `runId`, held until released or removed: free ones prepared for `key` first,
   * the most recently used first. Undefined when every kept slot is held (make a new one).
   */
  async take(key: string, runId: string): Promise<KeptSlot | undefined> {
    const kept = await this.read();
    kept.sort((a, b) => Number(b.key === key) - Number(a.key === key) || b.lastUsed - a.lastUsed);
    for (const candidate of kept) {
      if (!(await this.claim(candidate.name, runId))) continue;
      // Read again under the lock: the one listed may have been removed since.
      const slot = await this.readOne(candidate.name);
      if (slot && existsSync(join(slot.path, ".git"))) return slot;
      await this.remove(slot ?? candidate);
    }
    return undefined;
  }

  /** A new slot's name and path, held by `runId`; the caller makes the worktree there. */
  async create(runId: string): Promise<KeptSlot> {
    for (;;) {
      const name = `slot-${randomBytes(4).toString("hex")}`;
      if (!(await this.claim(name, runId))) continue;
      const now = Date.now();
      const slot: KeptSlot = {
        name,
        path: join(this.dir, name),
        keep: [],
        createdAt: now,
        lastUsed: now,
      };
      await this.write(slot);
      return slot;
    }
  }

  /**
   * Lets go of a held slot, recording the environment it now holds. `used`: an attempt worked in
   * it (it becomes the most recently used); else it keeps its place.
   */
  release(slot: KeptSlot, used = true): Promise<void> {
    return this.releaseAll([{ slot, used }]);
  }

  /** Lets go of held slots at once: the ones whose environment is new are measured by one `du`. */
  async releaseAll(slots: readonly { slot: KeptSlot; used: boolean }[]): Promise<void> {
    const unmeasured = slots
      .map(({ slot }) => slot)
      .filter((slot) => slot.measuredKey !== slot.key || slot.bytes === undefined);
    const usage = await diskUsage(unmeasured.map((slot) => slot.path));
    await Promise.all(
      slots.map(async ({ slot, used }) => {
        const measured = unmeasured.includes(slot)
          ? { bytes: usage.get(slot.path), measuredKey: slot.key }
          : { bytes: slot.bytes, measuredKey: slot.measuredKey };
        await this.write({ ...slot, ...measured, lastUsed: used ? Date.now() : slot.lastUsed });
        await this.unlock(slot.name);
      }),
    );
  }

  /** Removes a held slot: its worktree (registration and files) and its files here. */
  remove(slot: Pick<KeptSlot, "name" | "path">): Promise<void> {
    return this.removeAll([slot]);
  }

  /** Removes held slots at once: their files, then one prune of every registration left. */
  private async removeAll(slots: readonly Pick<KeptSlot, "name" | "path">[]): Promise<void> {
    if (slots.length === 0) return;
    await Promise.all(slots.map((slot) => rm(slot.path, { recursive: true, force: true })));
    // A worktree whose files are gone is still registered until pruned: one git for all of them.
    await git(["worktree", "prune"], { cwd: this.root }).catch(() => undefined);
    await Promise.all(
      slots.map(async (slot) => {
        await rm(join(this.dir, `${slot.name}.json`), { force: true });
        await this.unlock(slot.name);
      }),
    );
  }

  /**
   * Removes free slots past the limits: unused longer than `maxAgeMs`, then the least recently
   * used while more than `maxSlots` are kept or they take more than `maxBytes`. `all` removes
   * every free one. Returns the slots removed.
   */
  async prune(all = false): Promise<KeptSlot[]> {
    const kept = await this.read();
    kept.sort((a, b) => a.lastUsed - b.lastUsed);
    let count = kept.length;
    let bytes = kept.reduce((sum, slot) => sum + (slot.bytes ?? 0), 0);
    const now = Date.now();
    const removed: KeptSlot[] = [];
    for (const slot of kept) {
      const over =
        all ||
        count > this.limits.maxSlots ||
        bytes > this.limits.maxBytes ||
        now - slot.lastUsed > this.limits.maxAgeMs;
      if (!over || !(await this.claim(slot.name, "prune"))) continue;
      removed.push(slot);
      count--;
      bytes -= slot.bytes ?? 0;
    }
    await this.removeAll(removed);
    await this.sweepLocks();
    return removed;
  }

  /** Every kept slot, with its holder when a live process holds it. */
  async list(): Promise<ListedSlot[]> {
    const kept = await this.read();
    return Promise.all(
      kept.map(async (slot) => {
        const holder = await readHolder(this.lockPath(slot.name));
        return holder && this.holds(holder, slot.name) ? { ...slot, heldBy: holder } : slot;
      }),
    );
  }

  private async read(): Promise<KeptSlot[]> {
    const names = (await readdir(this.dir).catch(() => [] as string[]))
      .map((file) => slotFile.exec(file)?.[1])
      .filter((name): name is string => name !== undefined);
    const slots = await Promise.all(names.map((name) => this.readOne(name)));
    return slots.filter((slot): slot is KeptSlot => slot !== undefined);
  }

  private async readOne(name: string): Promise<KeptSlot | undefined> {
    try {
      const slot = JSON.parse(await readFile(join(this.dir, `${name}.json`), "utf8")) as KeptSlot;
      // The path is always this pool's: a moved cache directory still finds its slots.
      return { ...slot, name, path: join(this.dir, name), keep: slot.keep ?? [] };
    } catch {
      // Torn by a crash while written: the slot is known by name only and goes at the next take.
      return { name, path: join(this.dir, name), keep: [], createdAt: 0, lastUsed: 0 };
    }
  }

  private async write(slot: KeptSlot): Promise<void> {
    const file = join(this.dir, `${slot.name}.json`);
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, `${JSON.stringify(slot)}\n`);
    await rename(temp, file);
  }

  private lockPath(name: string): string {
    return join(this.dir, `${name}.lock`);
  }

  private holds(holder: Holder, name: string): boolean {
    if (holder.pid === process.pid) return heldHere.has(this.lockPath(name));
    return isHolderAlive(holder);
  }

  /** Takes a slot's lock; false while a live process holds it. A dead holder's lock is taken over. */
  private async claim(name: string, runId: string): Promise<boolean> {
    const path = this.lockPath(name);
    for (let tries = 0; tries < 3; tries++) {
      try {
        await writeFile(path, JSON.stringify({ ...currentProcess(), runId }), { flag: "wx" });
        heldHere.add(path);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readHolder(path);
      if (holder && this.holds(holder, name)) return false;
      // The dead run's setup command may still be writing into the slot.
      if (holder?.runId) killLeftoverSetup(holder.runId);
      await rm(path, { force: true });
    }
    return false;
  }

  private async unlock(name: string): Promise<void> {
    const path = this.lockPath(name);
    if (!heldHere.delete(path)) return;
    await rm(path, { force: true });
  }

  /** Lock files of slots that are gone, whose holder is gone too. */
  private async sweepLocks(): Promise<void> {
    for (const file of await readdir(this.dir).catch(() => [] as string[])) {
      const name = /^(slot-[0-9a-f]+)\.lock$/.exec(file)?.[1];
      if (!name || existsSync(join(this.dir, `${name}.json`))) continue;
      const holder = await readHolder(this.lockPath(name));
      if (!holder || !this.holds(holder, name)) await rm(this.lockPath(name), { force: true });
    }
  }
}

/** Where the slots of the repository whose top is `root` are kept. */
export async function poolDirectory(root: string): Promise<string> {
  const common = (
    await git(["rev-parse", "--path-format=absolute", "--git-common-dir"], { cwd: root })
  ).stdout.trim();
  // The repository's identity is its git directory: worktrees of one repository share a pool.
  const id = createHash("sha256")
    .update(await realpath(common))
    .digest("hex")
    .slice(0, 12);
  const label =
    basename(root)
      .replace(/[^A-Za-z0-9._-]/g, "_")
      .slice(0, 40) || "repository";
  return join(cacheDirectory(), "slots", `${label}-${id}`);
}

/** Pools of repositories that are gone (a deleted clone): nothing can use their slots again. */
async function removeOrphanPools(parent: string): Promise<void> {
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    const dir = join(parent, entry);
    try {
      const { root } = JSON.parse(await readFile(join(dir, "pool.json"), "utf8")) as {
        root?: string;
      };
      if (typeof root === "string" && !existsSync(root)) {
        await rm(dir, { recursive: true, force: true });
      }
    } catch {
      // Being made by another process, or not a pool.
    }
  }
}

async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    const { pid, startTime, runId } = JSON.parse(await readFile(path, "utf8")) as Partial<Holder>;
    if (typeof pid !== "number") return undefined;
    return {
      pid,
      ...(typeof startTime === "string" ? { startTime } : {}),
      runId: String(runId ?? ""),
    };
  } catch {
    // Missing, or torn by a crash while written: no live claim.
    return undefined;
  }
}

const execFileAsync = promisify(execFile);

/**
 * Bytes each directory takes on disk, as `du` counts them (hard links counted in each, as if it
 * were measured alone); a directory `du` cannot tell is left out.
 */
async function diskUsage(paths: readonly string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  if (paths.length === 0) return sizes;
  // One process for all: `du` prints a total per argument, in order (one failing sets the exit code).
  const stdout = await execFileAsync("du", ["-skl", "--", ...paths], {
    maxBuffer: 1024 * 1024,
  }).then(
    (done) => done.stdout,
    (error: { stdout?: string }) => error.stdout ?? "",
  );
  for (const line of stdout.split("\n")) {
    const tab = line.indexOf("\t");
    const kib = Number.parseInt(line.slice(0, tab), 10);
    if (tab !== -1 && Number.isFinite(kib)) sizes.set(line.slice(tab + 1), kib * 1024);
  }
  return sizes;
}
