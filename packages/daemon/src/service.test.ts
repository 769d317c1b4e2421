import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DaemonReply } from "./protocol.js";
import { DaemonService } from "./service.js";

// The service's protocol over its real socket, without an agent: what a client gets for good and
// bad requests, and how the service ends.
const services: DaemonService[] = [];
const build = { version: "0.0.0-test", build: "test" };
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop("test over");
});

async function started(cacheDir = mkdtempSync(join(tmpdir(), "tl-daemon-svc-"))) {
  const service = new DaemonService({ cacheDir, idleMs: 60_000, build });
  services.push(service);
  expect(await service.listen()).toBe(true);
  return service;
}

function open(
  path: string,
): Promise<{ socket: Socket; replies: DaemonReply[]; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const replies: DaemonReply[] = [];
    let buffered = "";
    socket.on("data", (chunk) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) if (line) replies.push(JSON.parse(line) as DaemonReply);
    });
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    socket.once("connect", () => resolve({ socket, replies, closed }));
    socket.once("error", reject);
  });
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
}

describe("the daemon's service", () => {
  it("answers hello and status, and hangs up on a line that is not JSON", async () => {
    const service = await started();
    const client = await open(service.socketPath);
    client.socket.write(`${JSON.stringify({ type: "hello", version: "x", build: "y" })}\n`);
    client.socket.write(`${JSON.stringify({ type: "status", id: 1 })}\n`);
    await until(() => client.replies.length >= 2);
    expect(client.replies[0]).toMatchObject({ type: "hello", pid: process.pid, ...build });
    expect(client.replies[1]).toMatchObject({
      type: "status",
      id: 1,
      status: { pid: process.pid, attempts: 0, servers: 0, serverStarts: 0 },
    });
    client.socket.write("this is not a message\n");
    await client.closed;
  });

  it("returns an executor's typed error for an attempt it cannot run", async () => {
    const service = await started();
    const client = await open(service.socketPath);
    const attempt = {
      subTask: { id: "a", title: "a", description: "a", successCriteria: [], dependsOn: [] },
      attempt: 1,
      cwd: tmpdir(),
    };
    client.socket.write(
      `${JSON.stringify({ type: "run", id: 7, spec: { options: { model: "no-slash" } }, prompt: "p", attempt })}\n`,
    );
    await until(() => client.replies.length > 0);
    expect(client.replies[0]).toMatchObject({ type: "failed", id: 7, code: "invalid-config" });
  });

  it("answers stop once stopped, naming its process tree for the client to wait on", async () => {
    const service = await started();
    const client = await open(service.socketPath);
    client.socket.write(`${JSON.stringify({ type: "stop", id: 2 })}\n`);
    await client.closed;
    expect(client.replies).toEqual([
      {
        type: "done",
        id: 2,
        processes: expect.arrayContaining([expect.objectContaining({ pid: process.pid })]),
      },
    ]);
    await service.stopped;
  });

  it("holds its cache directory against a second service, and stops when its socket is removed", async () => {
    const service = await started();
    const cacheDir = join(service.socketPath, "..");
    const second = new DaemonService({ cacheDir, build });
    expect(await second.listen()).toBe(false);
    rmSync(service.socketPath);
    await service.stopped;
    // Its lock went with it: a new service takes the directory.
    await started(cacheDir);
  });
});
