import { execFile } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  createManager,
  FileRunStore,
  MemoryRunStore,
  type RunReport,
  type TaskLedger,
} from "@taskledger/core";
import { createFakeExecutor, createScriptedModel, roleOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { type IpcMainLike, registerTaskLedgerIpc } from "./electron-bridge.ts";
import { createTaskLedgerServer } from "./http-server.ts";
import { runOffline } from "./offline-run.ts";

const plan: TaskLedger = {
  subTasks: [
    { id: "a", title: "A", description: "do a", successCriteria: ["a"], dependsOn: [], checks: [] },
    {
      id: "b",
      title: "B",
      description: "do b",
      successCriteria: ["b"],
      dependsOn: ["a"],
      checks: [],
    },
    { id: "c", title: "C", description: "do c", successCriteria: ["c"], dependsOn: [], checks: [] },
  ],
};
const request = "Do a, then b, and also c.";

function managerWith(executor = createFakeExecutor({ fallback: { type: "success", delayMs: 5 } })) {
  return {
    manager: createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: plan }] }),
      executor,
    }),
    executor,
  };
}

describe("examples/scripted-run.ts", () => {
  it("runs to a completed report", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      join(import.meta.dirname, "scripted-run.ts"),
    ]);
    expect(stdout).toContain("Run completed");
    expect(stdout).toMatch(/completed tests\s+attempts 2/);
  }, 60_000);
});

/** Electron's ipcMain, as far as the bridge uses it: `handle`/`invoke` and `on`/`send`. */
class FakeIpcMain implements IpcMainLike {
  private readonly handlers = new Map<string, (event: unknown, ...args: unknown[]) => unknown>();
  private readonly emitter = new EventEmitter();
  handle(channel: string, listener: (event: unknown, ...args: unknown[]) => unknown) {
    this.handlers.set(channel, listener);
  }
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void) {
    this.emitter.on(channel, listener);
  }
  removeHandler(channel: string) {
    this.handlers.delete(channel);
  }
  removeAllListeners(channel: string) {
    this.emitter.removeAllListeners(channel);
  }
  invoke(channel: string, ...args: unknown[]) {
    return Promise.resolve(this.handlers.get(channel)?.({}, ...args));
  }
  send(channel: string, ...args: unknown[]) {
    this.emitter.emit(channel, {}, ...args);
  }
  get listenerCount() {
    return this.handlers.size + this.emitter.eventNames().length;
  }
}

class FakeRenderer extends EventEmitter {
  destroyed = false;
  send(channel: string, payload: unknown) {
    this.emit(channel, payload);
  }
  isDestroyed() {
    return this.destroyed;
  }
  next<T>(channel: string): Promise<T> {
    return new Promise((resolve) => this.once(channel, resolve));
  }
}

describe("examples/electron-bridge.ts", () => {
  it("sends the plan for review, runs the edited plan the UI answers with and forwards every event", async () => {
    const ipc = new FakeIpcMain();
    const renderer = new FakeRenderer();
    const { manager, executor } = managerWith();
    const dispose = registerTaskLedgerIpc(ipc, renderer, manager);
    const events: { type: string }[] = [];
    renderer.on("taskledger:event", (e) => events.push(e));
    const asked = renderer.next<{ runId: string; kind: string; ledger: TaskLedger }>(
      "taskledger:review",
    );
    const runId = await ipc.invoke("taskledger:start", request);
    const review = await asked;
    expect(review).toMatchObject({ runId, kind: "plan" });
    expect(review.ledger.subTasks.map((s) => s.id)).toEqual(["a", "b", "c"]);
    const reported = renderer.next<{ report: RunReport }>("taskledger:report");
    // The person removes "c" before approving.
    ipc.send("taskledger:review-answer", runId, {
      action: "edit",
      ledger: { subTasks: review.ledger.subTasks.filter((s) => s.id !== "c") },
    });
    const { report } = await reported;
    expect(report.status).toBe("completed");
    expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a", "b"]);
    expect(events[0]?.type).toBe("run-started");
    expect(events.map((e) => e.type)).toContain("plan-review-requested");
    expect(events.at(-1)?.type).toBe("run-finished");
    dispose();
    expect(ipc.listenerCount).toBe(0);
  });

  it("cancels from the UI, and a rejected plan runs nothing", async () => {
    const ipc = new FakeIpcMain();
    const renderer = new FakeRenderer();
    const { manager, executor } = managerWith(createFakeExecutor({ fallback: { type: "hang" } }));
    registerTaskLedgerIpc(ipc, renderer, manager);
    const asked = renderer.next("taskledger:review");
    const runId = await ipc.invoke("taskledger:start", request);
    await asked;
    ipc.send("taskledger:review-answer", runId, { action: "approve" });
    while (executor.active === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const reported = renderer.next<{ report: RunReport }>("taskledger:report");
    ipc.send("taskledger:cancel", runId);
    expect((await reported).report.status).toBe("cancelled");
    expect(executor.active).toBe(0);

    const { manager: second, executor: unused } = managerWith();
    const ipc2 = new FakeIpcMain();
    const renderer2 = new FakeRenderer();
    registerTaskLedgerIpc(ipc2, renderer2, second);
    const asked2 = renderer2.next("taskledger:review");
    const runId2 = await ipc2.invoke("taskledger:start", request);
    await asked2;
    const reported2 = renderer2.next<{ report: RunReport }>("taskledger:report");
    ipc2.send("taskledger:review-answer", runId2, { action: "reject", reason: "not now" });
    expect((await reported2).report).toMatchObject({ status: "cancelled" });
    expect(unused.calls).toHaveLength(0);
  });

  it("an answer from the UI that is no decision comes back for review with its problems; nothing runs until a real one", async () => {
    const ipc = new FakeIpcMain();
    const renderer = new FakeRenderer();
    const { manager, executor } = managerWith();
    registerTaskLedgerIpc(ipc, renderer, manager);
    const asked = renderer.next("taskledger:review");
    const runId = await ipc.invoke("taskledger:start", request);
    await asked;
    const askedAgain = renderer.next<{ problems?: string[] }>("taskledger:review");
    ipc.send("taskledger:review-answer", runId, { action: "maybe" });
    expect((await askedAgain).problems?.[0]).toContain('got {"action":"maybe"}');
    expect(executor.calls).toHaveLength(0);
    const reported = renderer.next<{ report: RunReport }>("taskledger:report");
    ipc.send("taskledger:review-answer", runId, { action: "approve" });
    expect((await reported).report.status).toBe("completed");
  });

  it("a run waiting for review when the app quits asks again after a restart", async () => {
    const store = new MemoryRunStore();
    const first = createManager({
      cwd: process.cwd(),
      model: createScriptedModel({ responses: [{ object: plan }] }),
      executor: createFakeExecutor(),
      store,
    });
    const renderer = new FakeRenderer();
    const ipc = new FakeIpcMain();
    registerTaskLedgerIpc(ipc, renderer, first);
    const asked = renderer.next("taskledger:review");
    const started = (await ipc.invoke("taskledger:start", request)) as string;
    await asked;
    // The app quits here: the process is gone, the log ends with the open review.
    const records = await store.read(started);
    expect(records.at(-1)?.type).toBe("plan-review-requested");
    const afterRestart = new MemoryRunStore();
    for (const record of records) await afterRestart.append(started, record);

    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const manager = createManager({ cwd: process.cwd(), executor, store: afterRestart });
    const renderer2 = new FakeRenderer();
    const ipc2 = new FakeIpcMain();
    registerTaskLedgerIpc(ipc2, renderer2, manager);
    const askedAgain = renderer2.next<{ runId: string; ledger: TaskLedger }>("taskledger:review");
    expect(await ipc2.invoke("taskledger:resume", started)).toBe(started);
    expect((await askedAgain).ledger.subTasks.map((s) => s.id)).toEqual(["a", "b", "c"]);
    const reported = renderer2.next<{ report: RunReport }>("taskledger:report");
    ipc2.send("taskledger:review-answer", started, { action: "approve" });
    expect((await reported).report.status).toBe("completed");
    expect(executor.calls.map((c) => c.subTaskId).sort()).toEqual(["a", "b", "c"]);
  });

  it("dispose() while a replan waits for review leaves the run resumable: the resumed bridge asks about that replan", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taskledger-bridge-replan-"));
    try {
      const one = { subTasks: [plan.subTasks[0]!] };
      const replan = { subTasks: [{ ...plan.subTasks[0]!, id: "a2", title: "A again" }] };
      const first = createManager({
        cwd: process.cwd(),
        // The plan (a alone), then the replan after a fails.
        model: createScriptedModel({ responses: [{ object: one }, { object: replan }] }),
        executor: createFakeExecutor({ script: { a: [{ type: "error" }] } }),
        store: new FileRunStore(dir),
        maxRetries: 0,
      });
      const ipc = new FakeIpcMain();
      const renderer = new FakeRenderer();
      const dispose = registerTaskLedgerIpc(ipc, renderer, first);
      const planAsked = renderer.next<{ runId: string }>("taskledger:review");
      const runId = (await ipc.invoke("taskledger:start", request)) as string;
      await planAsked;
      const replanAsked = renderer.next<{ kind: string }>("taskledger:review");
      ipc.send("taskledger:review-answer", runId, { action: "approve" });
      expect((await replanAsked).kind).toBe("replan");
      const stopped = renderer.next<{ report: RunReport }>("taskledger:report");
      dispose(); // the window closes while the person decides
      const { report } = await stopped;
      expect(report.status).toBe("cancelled");
      expect(report.subTasks.map((s) => [s.id, s.status])).toEqual([["a", "cancelled"]]);

      const executor = createFakeExecutor({ fallback: { type: "success" } });
      const model = createScriptedModel(); // the replan is in the log: the model is not asked again
      const manager = createManager({
        cwd: process.cwd(),
        model,
        executor,
        store: new FileRunStore(dir),
      });
      const ipc2 = new FakeIpcMain();
      const renderer2 = new FakeRenderer();
      registerTaskLedgerIpc(ipc2, renderer2, manager);
      const askedAgain = renderer2.next<{ kind: string; replaced: string[]; ledger: TaskLedger }>(
        "taskledger:review",
      );
      await ipc2.invoke("taskledger:resume", runId);
      const again = await askedAgain;
      expect([again.kind, again.replaced, again.ledger.subTasks.map((s) => s.id)]).toEqual([
        "replan",
        ["a"],
        ["a2"],
      ]);
      const reported = renderer2.next<{ report: RunReport }>("taskledger:report");
      ipc2.send("taskledger:review-answer", runId, { action: "approve" });
      expect((await reported).report.status).toBe("completed");
      expect(executor.calls.map((c) => c.subTaskId)).toEqual(["a2"]);
      expect(model.calls).toHaveLength(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

async function readSse(response: Response): Promise<{ type: string; seq: number }[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((frame) =>
      JSON.parse(
        frame
          .split("\n")
          .find((l) => l.startsWith("data: "))!
          .slice(6),
      ),
    );
}

describe("examples/http-server.ts", () => {
  async function listen(manager: ReturnType<typeof createManager>) {
    const workRoot = await mkdtemp(join(tmpdir(), "http-server-"));
    const { server, close } = createTaskLedgerServer(manager, { workRoot });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = (path: string, body?: unknown) =>
      fetch(`${url}${path}`, {
        method: "POST",
        ...(body === undefined
          ? {}
          : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      });
    return {
      url,
      post,
      /** The runs' directories left under the work root. */
      left: () => readdir(workRoot),
      close: async () => {
        await close();
        // The server removed every run's directory: the root is empty.
        expect(await readdir(workRoot)).toEqual([]);
        await rm(workRoot, { recursive: true, force: true });
      },
    };
  }

  it("starts runs, each in its own directory, streams their events as Server-Sent Events, then serves the report", async () => {
    const { manager, executor } = managerWith();
    const { url, post, close } = await listen(manager);
    const started = await post("/runs", { request });
    expect(started.status).toBe(202);
    const { runId, cwd } = (await started.json()) as { runId: string; cwd: string };
    const events = await readSse(await fetch(`${url}/runs/${runId}/events`));
    expect(events[0]?.type).toBe("run-started");
    expect(events.at(-1)?.type).toBe("run-finished");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const report = (await (await fetch(`${url}/runs/${runId}`)).json()) as RunReport;
    expect(report.status).toBe("completed");
    const second = (await (await post("/runs", { request })).json()) as { cwd: string };
    expect(second.cwd).not.toBe(cwd);
    expect(new Set(executor.calls.map((c) => c.cwd))).toContain(cwd);
    // A finished run cannot be cancelled.
    expect((await post(`/runs/${runId}/cancel`)).status).toBe(409);
    await close();
  });

  it("cancels a run over HTTP and answers bad input: 400 for no string request, 413 for a 2 MB body", async () => {
    const { manager, executor } = managerWith(createFakeExecutor({ fallback: { type: "hang" } }));
    const { url, post, left, close } = await listen(manager);
    const { runId } = (await (await post("/runs", { request })).json()) as { runId: string };
    const stream = fetch(`${url}/runs/${runId}/events`).then(readSse);
    while (executor.active === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await post(`/runs/${runId}/cancel`)).status).toBe(202);
    const events = await stream;
    expect(events.at(-1)).toMatchObject({ type: "run-finished", report: { status: "cancelled" } });
    expect((await post("/runs", "not json")).status).toBe(400);
    expect((await post("/runs", { request: " " })).status).toBe(400);
    expect((await post("/runs", { request: 42 })).status).toBe(400);
    expect((await post("/runs", "null")).status).toBe(400);
    expect((await post("/runs", { request: "x".repeat(2 * 1024 * 1024) })).status).toBe(413);
    expect((await fetch(`${url}/runs/nope`)).status).toBe(404);
    // Only the first request started a run, and only its directory is there.
    expect(new Set(executor.calls.map((c) => c.cwd)).size).toBe(1);
    expect(await left()).toHaveLength(1);
    await close();
  });

  it("close() cancels a run whose event stream is open: nothing more is dispatched, the stream ends", async () => {
    const { manager, executor } = managerWith(createFakeExecutor({ fallback: { type: "hang" } }));
    const { url, post, close } = await listen(manager);
    const { runId } = (await (await post("/runs", { request })).json()) as { runId: string };
    const stream = fetch(`${url}/runs/${runId}/events`).then(readSse);
    while (executor.active === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await close();
    const events = await stream;
    expect(events.at(-1)).toMatchObject({ type: "run-finished", report: { status: "cancelled" } });
    expect(executor.active).toBe(0);
    // "a" hung and was cancelled; its dependent "b" and the independent "c" may have started, no more.
    expect(executor.calls.map((c) => c.subTaskId)).not.toContain("b");
  });
});

describe("examples/offline-run.ts", () => {
  it("plans, runs both steps on the real opencode CLI and judges them, all scripted by role", async () => {
    const cwd = await mkdtemp(join(tmpdir(), "offline-run-"));
    try {
      const { report, requests, unexpected } = await runOffline(
        "Write hello.txt, then bye.txt",
        cwd,
      );
      expect(report.status).toBe("completed");
      expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
        ["hello", "completed", 1],
        ["bye", "completed", 1],
      ]);
      expect(await readFile(join(cwd, "hello.txt"), "utf8")).toBe("hello\n");
      expect(await readFile(join(cwd, "bye.txt"), "utf8")).toBe("bye\n");
      const roles = requests.map(roleOf);
      expect(roles.filter((r) => r === "plan")).toHaveLength(1);
      expect(roles.filter((r) => r === "judge")).toHaveLength(2);
      expect(roles.filter((r) => r === "agent").length).toBeGreaterThanOrEqual(4);
      expect(unexpected).toBe(0);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  }, 120_000);
});
