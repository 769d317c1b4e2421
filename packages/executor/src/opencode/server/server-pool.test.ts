import type { Sandbox } from "@taskledger/core";
import { describe, expect, it, vi } from "vitest";
import type { OpencodeServer } from "./opencode-server.js";
import { ServerPool } from "./server-pool.js";

type Fake = { url: string; attempts: number; ended: unknown; pid: number; startTime: string };

function fakePool(size: number, maxAttempts = 100, idleMs?: number) {
  const started: Fake[] = [];
  const stopped: Fake[] = [];
  const pool = new ServerPool(
    size,
    async () => {
      const server: Fake = {
        url: `http://127.0.0.1:${started.length}`,
        attempts: 0,
        ended: undefined,
        pid: 1000 + started.length,
        startTime: "42",
      };
      started.push(server);
      return server as unknown as OpencodeServer;
    },
    async (server) => {
      stopped.push(server as unknown as Fake);
    },
    maxAttempts,
    idleMs,
  );
  return { pool, started, stopped };
}

const signal = () => new AbortController().signal;

describe("ServerPool", () => {
  it("stops a server idle for idleMs, not one taken again before, and starts afresh after", async () => {
    vi.useFakeTimers();
    try {
      const { pool, started, stopped } = fakePool(2, 100, 60_000);
      const a = (await pool.acquire(signal())) as OpencodeServer;
      const b = (await pool.acquire(signal())) as OpencodeServer;
      pool.release(a, true);
      pool.release(b, true);
      vi.advanceTimersByTime(59_000);
      // b serves again before its idle time is up: its timer starts over when it comes back.
      expect(await pool.acquire(signal(), undefined)).toBe(b);
      vi.advanceTimersByTime(1000);
      expect(stopped).toEqual([a]);
      expect(pool.running).toBe(1);
      pool.release(b, true);
      vi.advanceTimersByTime(60_000);
      expect(stopped).toEqual([a, b]);
      expect(pool.running).toBe(0);
      await pool.acquire(signal());
      expect(started).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("resize: a waiting attempt gets a seat when the pool grows; idle servers over a smaller size stop", async () => {
    const { pool, started, stopped } = fakePool(1);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    let second: OpencodeServer | undefined;
    const waiting = pool.acquire(signal()).then((s) => {
      second = s as OpencodeServer;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(second).toBeUndefined();
    pool.resize(2);
    await waiting;
    expect(started).toHaveLength(2);
    expect(pool.started).toBe(2);
    pool.release(a, true);
    pool.release(second as OpencodeServer, true);
    expect(pool.running).toBe(2);
    pool.resize(1);
    expect(stopped).toHaveLength(1);
    expect(pool.running).toBe(1);
  });

  it("a confined server serves only its own directory; an attempt elsewhere makes room for a new one", async () => {
    const { pool, started, stopped } = fakePool(1);
    const sandbox = {} as Sandbox;
    const confined = (await pool.acquire(signal(), "/a", sandbox)) as OpencodeServer;
    pool.release(confined, true);
    expect(await pool.acquire(signal(), "/a", sandbox)).toBe(confined);
    pool.release(confined, true);
    const free = (await pool.acquire(signal(), "/b")) as OpencodeServer;
    expect(free).not.toBe(confined);
    expect(stopped).toEqual([confined]);
    pool.release(free, true);
    const other = (await pool.acquire(signal(), "/c", sandbox)) as OpencodeServer;
    expect(other).not.toBe(free);
    pool.release(other, true);
    // The same directory under another sandbox (other hosts allowed) is not its server's either.
    expect(await pool.acquire(signal(), "/c", {} as Sandbox)).not.toBe(other);
    expect(started).toHaveLength(4);
  });

  it("starts servers on demand up to its size, then reuses an idle one", async () => {
    const { pool, started } = fakePool(2);
    const a = await pool.acquire(signal());
    const b = await pool.acquire(signal());
    expect(started).toHaveLength(2);
    pool.release(a as OpencodeServer, true);
    expect(await pool.acquire(signal())).toBe(a);
    pool.release(b as OpencodeServer, true);
    expect(started).toHaveLength(2);
  });

  it("an attempt past the size waits for a server to come back; an abort while waiting rejects", async () => {
    const { pool } = fakePool(1);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    const controller = new AbortController();
    const aborted = pool.acquire(controller.signal);
    controller.abort(new Error("stop"));
    await expect(aborted).rejects.toThrow("stop");
    const waiting = pool.acquire(signal());
    pool.release(a, true);
    expect(await waiting).toBe(a);
  });

  it("siblings first, then candidates: a waiting attempt that is not a candidate is served first", async () => {
    const { pool } = fakePool(1);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    const candidate = pool.acquire(signal(), undefined, undefined, true);
    const sibling = pool.acquire(signal());
    pool.release(a, true);
    const first = await Promise.race([
      candidate.then((server) => ({ who: "candidate", server })),
      sibling.then((server) => ({ who: "sibling", server })),
    ]);
    expect(first.who).toBe("sibling");
    pool.release(first.server as OpencodeServer, true);
    expect(await candidate).toBe(a);
    pool.release(a, true);
    // A candidate arriving while another attempt waits queues behind it, server free or not.
    const held = (await pool.acquire(signal())) as OpencodeServer;
    const waiting = pool.acquire(signal());
    pool.release(held, true);
    const late = pool.acquire(signal(), undefined, undefined, true);
    expect(await waiting).toBe(held);
    pool.release(held, true);
    expect(await late).toBe(held);
  });

  it("an unhealthy, dead or worn-out server is stopped, not reused, and its slot goes to a new one", async () => {
    const { pool, started, stopped } = fakePool(1, 2);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    pool.release(a, false);
    expect(stopped).toEqual([a]);
    const b = (await pool.acquire(signal())) as OpencodeServer;
    expect(b).not.toBe(a);
    (b as unknown as Fake).ended = { exitCode: null, signal: "SIGKILL" };
    pool.release(b, true);
    const c = (await pool.acquire(signal())) as OpencodeServer;
    expect(c).not.toBe(b);
    (c as unknown as Fake).attempts = 2;
    pool.release(c, true);
    expect(stopped).toEqual([a, b, c]);
    expect(started).toHaveLength(3);
    expect(pool.running).toBe(0);
  });

  it("owns its running servers only, by pid and start time", async () => {
    const { pool } = fakePool(1);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    expect(pool.owns({ pid: a.pid, startTime: "42" })).toBe(true);
    expect(pool.owns({ pid: a.pid, startTime: "41" })).toBe(false);
    pool.release(a, false);
    expect(pool.owns({ pid: a.pid, startTime: "42" })).toBe(false);
  });

  it("close stops every server, and later acquires throw", async () => {
    const { pool, stopped } = fakePool(2);
    const a = (await pool.acquire(signal())) as OpencodeServer;
    const b = (await pool.acquire(signal())) as OpencodeServer;
    pool.release(a, true);
    await pool.close();
    expect(new Set(stopped)).toEqual(new Set([a, b]));
    await expect(pool.acquire(signal())).rejects.toThrow("closed");
  });
});
