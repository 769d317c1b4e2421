import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A real `redis-server` on 127.0.0.1 at a free port, for tests; nothing is written to disk unless
 * it is `persistent` (an append-only file synced on every write, in a directory of its own).
 */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops it (SIGKILL when `hard`) and waits for the process to end. */
  stop(options?: { hard?: boolean }): Promise<void>;
  /** Kills it and starts it again on the same port: empty, or as it was when `persistent`. */
  restart(): Promise<void>;
}

/** The line a developer without Redis reads; CI fails with it instead of skipping. */
export const redisMissingNote =
  "redis-server is not installed: `apt-get install -y redis-server` to run the queue tests";

/** True when `redis-server` can be run here. */
export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Whether the queue tests run: yes with Redis; without it a developer skips them (told
 * `redisMissingNote` once), and CI fails, since a missing server there is a setup bug.
 */
export function redisTestsEnabled(): boolean {
  if (hasRedisServer()) return true;
  if (process.env.CI) throw new Error(`${redisMissingNote} (CI is set: failing, not skipping)`);
  console.warn(redisMissingNote);
  return false;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

function launch(port: number, dir: string | undefined): Promise<ChildProcess> {
  const storage = dir
    ? ["--dir", dir, "--appendonly", "yes", "--appendfsync", "always"]
    : ["--appendonly", "no"];
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", ...storage],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server did not start in 10 s: ${out.slice(-500)}`));
    }, 10_000);
    child.stdout?.on("data", (chunk) => {
      out += chunk;
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        resolve(child);
      }
    });
    child.stderr?.resume();
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}) before it was ready: ${out.slice(-500)}`));
    });
  });
}

export async function startRedisServer(
  options: { persistent?: boolean } = {},
): Promise<RedisServer> {
  const port = await freePort();
  const dir = options.persistent ? await mkdtemp(join(tmpdir(), "taskledger-redis-")) : undefined;
  let child = await launch(port, dir);
  const stop = async (options: { hard?: boolean } = {}) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill(options.hard ? "SIGKILL" : "SIGTERM");
    await exited;
  };
  const remove = () => (dir ? rm(dir, { recursive: true, force: true }) : Promise.resolve());
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop(options) {
      await stop(options);
      await remove();
    },
    async restart() {
      await stop({ hard: true });
      child = await launch(port, dir);
    },
  };
}
