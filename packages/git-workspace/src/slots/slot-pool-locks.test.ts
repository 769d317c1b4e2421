import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { processStartTime } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { makeRepo, sh } from "../test-support/git-repo.js";
import { type KeptSlot, poolDirectory, SlotPool } from "./slot-pool.js";

/** A pool with one free kept slot whose worktree exists, as a finished run leaves it. */
async function poolWithSlot(
  limits?: SlotPool["limits"],
): Promise<{ pool: SlotPool; slot: KeptSlot; repo: string }> {
  const repo = makeRepo({ "a.txt": "a\n" });
  const pool = await SlotPool.open(repo, limits);
  const slot = await pool.create("run-1");
  sh(repo, "worktree", "add", "--detach", slot.path);
  await pool.release(slot);
  return { pool, slot, repo };
}

const lockOf = (pool: SlotPool, name: string) => join(pool.dir, `${name}.lock`);

describe("slot locks", () => {
  it("a slot held by a live other process is not taken; once that process is gone it is", async () => {
    const { pool, slot } = await poolWithSlot();
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    await once(other, "spawn");
    try {
      const pid = other.pid!;
      writeFileSync(
        lockOf(pool, slot.name),
        JSON.stringify({ pid, startTime: processStartTime(pid), runId: "other-run" }),
      );
      expect(await pool.take("key", "run-2")).toBeUndefined();
      expect((await pool.list()).map((s) => s.heldBy?.runId)).toEqual(["other-run"]);
      // Its pruning is refused too: a held slot is never removed under its run.
      expect(await pool.prune(true)).toEqual([]);
      expect(existsSync(slot.path)).toBe(true);
      other.kill("SIGKILL");
      await once(other, "exit");
      const taken = await pool.take("key", "run-2");
      expect(taken?.name).toBe(slot.name);
      expect(JSON.parse(readFileSync(lockOf(pool, slot.name), "utf8"))).toMatchObject({
        pid: process.pid,
        startTime: processStartTime(process.pid),
        runId: "run-2",
      });
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("a lock naming this process that it does not hold (an earlier run that failed) is stale", async () => {
    const { pool, slot } = await poolWithSlot();
    writeFileSync(lockOf(pool, slot.name), JSON.stringify({ pid: process.pid, runId: "failed" }));
    expect((await pool.list())[0]?.heldBy).toBeUndefined();
    expect((await pool.take("key", "run-2"))?.name).toBe(slot.name);
    // Held now by this run: a second take in this process finds nothing free.
    expect(await pool.take("key", "run-3")).toBeUndefined();
  });

  it("a lock whose pid runs again as another process (pid 1 after a container restart) is stale", async () => {
    const { pool, slot } = await poolWithSlot();
    writeFileSync(
      lockOf(pool, slot.name),
      JSON.stringify({ pid: 1, startTime: "1", runId: "old" }),
    );
    expect((await pool.take("key", "run-2"))?.name).toBe(slot.name);
  });

  it("a half-written slot file (a crash while it was written) is never taken as prepared", async () => {
    const { pool, slot } = await poolWithSlot();
    writeFileSync(join(pool.dir, `${slot.name}.json`), '{"name":"slot-');
    // Known by name only: no environment key, unused since ever.
    const [listed] = await pool.list();
    expect(listed).toMatchObject({ name: slot.name, keep: [], lastUsed: 0 });
    expect(listed?.key).toBeUndefined();
    // Pruning takes it first, as the oldest.
    expect((await pool.prune()).map((s) => s.name)).toEqual([slot.name]);
    expect(existsSync(slot.path)).toBe(false);
  });

  it("a half-written slot file whose worktree was never made is removed at the next take", async () => {
    const repo = makeRepo({ "a.txt": "a\n" });
    const pool = await SlotPool.open(repo);
    writeFileSync(join(pool.dir, "slot-0badf00d.json"), '{"name":"sl');
    expect(await pool.take("key", "run-2")).toBeUndefined();
    expect(readdirSync(pool.dir).filter((f) => f.startsWith("slot-"))).toEqual([]);
  });
});

describe("slot pruning", () => {
  it("removes the free slots unused longer than maxAgeMs, then the least recently used past maxBytes", async () => {
    const { pool: first, slot: recent, repo } = await poolWithSlot();
    const measured = (await first.list())[0]?.bytes;
    expect(measured).toBeGreaterThan(0);
    // Room for the slot just used and one more of 2000 bytes.
    const pool = await SlotPool.open(repo, {
      maxSlots: 10,
      maxBytes: measured! + 2500,
      maxAgeMs: 60_000,
    });
    const now = Date.now();
    const slots: Record<string, KeptSlot> = {};
    for (const [label, lastUsed, bytes] of [
      ["old", now - 120_000, 10],
      ["big-lru", now - 30_000, 2000],
      ["big-recent", now - 1000, 2000],
    ] as const) {
      const slot = await pool.create(`run-${label}`);
      sh(repo, "worktree", "add", "--detach", slot.path);
      const record = { ...slot, lastUsed, bytes };
      await pool.release(record);
      // release records the time it let go: put the age this case needs back.
      writeFileSync(join(pool.dir, `${slot.name}.json`), JSON.stringify(record));
      slots[label] = slot;
    }
    const removed = (await pool.prune()).map((s) => s.name);
    expect(removed).toEqual([slots.old!.name, slots["big-lru"]!.name]);
    expect(existsSync(slots.old!.path)).toBe(false);
    expect(existsSync(slots["big-lru"]!.path)).toBe(false);
    expect(existsSync(slots["big-recent"]!.path)).toBe(true);
    expect(existsSync(recent.path)).toBe(true);
    expect(sh(repo, "worktree", "list")).not.toContain(slots.old!.name);
  });

  it("removes the least recently used free slots past maxSlots", async () => {
    const { repo } = await poolWithSlot();
    const pool = await SlotPool.open(repo, { maxSlots: 1, maxBytes: 1e12, maxAgeMs: 1e12 });
    const newer = await pool.create("run-2");
    sh(repo, "worktree", "add", "--detach", newer.path);
    await pool.release({ ...newer, lastUsed: Date.now() + 1000 });
    const removed = await pool.prune();
    expect(removed).toHaveLength(1);
    expect(removed[0]?.name).not.toBe(newer.name);
    expect((await pool.list()).map((s) => s.name)).toEqual([newer.name]);
  });
});

describe("pools of removed repositories", () => {
  it("go when any pool is opened: nothing can use their slots again", async () => {
    const gone = makeRepo({ "a.txt": "a\n" });
    const orphan = await SlotPool.open(gone);
    await orphan.create("run-1");
    rmSync(gone, { recursive: true, force: true });
    const kept = makeRepo({ "b.txt": "b\n" });
    const keptPool = await poolDirectory(kept);
    mkdirSync(keptPool, { recursive: true });
    await SlotPool.open(kept);
    expect(existsSync(orphan.dir)).toBe(false);
    expect(readdirSync(dirname(orphan.dir))).toContain(keptPool.split("/").pop());
  });
});
