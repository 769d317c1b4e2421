import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processStartTime } from "@taskledger/process/lifetime";
import { createFakeExecutor } from "@taskledger/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import { createManager } from "../run/manager.js";
import { FileRunStore } from "./file-run-store.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "taskledger-store-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const event = (seq: number): RunEvent => ({
  type: "run-started",
  request: `r${seq}`,
  cwd: "/tmp",
  runId: "run1",
  seq,
  time: "t",
});

describe("FileRunStore", () => {
  it("names its directory absolute, so a relative one reads the same in every message", () => {
    expect(new FileRunStore("runs").directory).toBe(join(process.cwd(), "runs"));
  });

  it("appends records and reads them back in order", async () => {
    const store = new FileRunStore(join(dir, "nested"));
    await store.append("run1", event(0));
    await store.append("run1", event(1));
    expect((await store.read("run1")).map((r) => r.seq)).toEqual([0, 1]);
    expect(await store.read("other")).toEqual([]);
  });

  it("ignores a torn last record and rejects a corrupted one in the middle", async () => {
    const store = new FileRunStore(dir);
    await store.append("run1", event(0));
    await appendFile(join(dir, "run1.jsonl"), '{"type":"run-fin');
    expect(await store.read("run1")).toHaveLength(1);
    await writeFile(
      join(dir, "run2.jsonl"),
      `${JSON.stringify(event(0))}\nnot json\n${JSON.stringify(event(2))}\n`,
    );
    await expect(store.read("run2")).rejects.toSatisfy(
      (e) => StoreError.isInstance(e) && (e as Error).message.includes("line 2"),
    );
  });

  it("cuts a torn last record off before appending, so a second resume still reads the log", async () => {
    // A managed run, cut by a crash in the middle of writing a record; resumed, then resumed again.
    const plan = {
      subTasks: [
        { id: "a", title: "A", description: "d", successCriteria: ["c"] },
        { id: "b", title: "B", description: "d", successCriteria: ["c"], dependsOn: ["a"] },
      ],
    };
    const reference = new FileRunStore(join(dir, "reference"));
    const executor = () => createFakeExecutor({ fallback: { type: "success", text: "done" } });
    await createManager({
      cwd: process.cwd(),
      executor: executor(),
      store: reference,
      createRunId: () => "r",
    }).run("x", { plan });
    const records = await reference.read("r");
    const lines = records.slice(0, 4).map((r) => JSON.stringify(r));
    await writeFile(join(dir, "r.jsonl"), `${lines.join("\n")}\n${lines[3]?.slice(0, 25)}`);

    const first = await createManager({
      cwd: process.cwd(),
      executor: executor(),
      store: new FileRunStore(dir),
    })
      .resume("r")
      .result.catch((e: unknown) => e);
    expect(first).toMatchObject({ status: "completed" });
    const second = await createManager({
      cwd: process.cwd(),
      executor: executor(),
      store: new FileRunStore(dir),
    })
      .resume("r")
      .result.catch((e: unknown) => e);
    expect(second).toMatchObject({ status: "completed" });
    const log = await new FileRunStore(dir).read("r");
    const seqs = log.map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(log.filter((r) => r.type === "run-finished")).toHaveLength(1);
  });

  it("cuts a log that is all fragment to nothing before appending", async () => {
    await writeFile(join(dir, "run1.jsonl"), '{"type":"run-sta');
    const store = new FileRunStore(dir);
    await store.append("run1", event(0));
    expect(await readFile(join(dir, "run1.jsonl"), "utf8")).toBe(`${JSON.stringify(event(0))}\n`);
  });

  it("fails with a StoreError, not a hang, for a directory that can never be made", async () => {
    // Node's recursive mkdir spins forever on a path under /proc.
    const store = new FileRunStore("/proc/taskledger-newdir/runs");
    const error = await store.append("run1", event(0)).catch((e: unknown) => e);
    expect(StoreError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain("/proc/taskledger-newdir");
  });

  it("refuses run ids that would leave the directory", async () => {
    await expect(new FileRunStore(dir).append("../escape", event(0))).rejects.toSatisfy(
      StoreError.isInstance,
    );
  });

  it("a directory that cannot be written is a StoreError", async () => {
    // A regular file where the directory should be fails for root too, unlike a chmod.
    const blocked = join(dir, "blocked");
    await writeFile(blocked, "");
    await expect(new FileRunStore(blocked).append("run1", event(0))).rejects.toSatisfy(
      StoreError.isInstance,
    );
  });

  it("holds every state change of a managed run", async () => {
    const store = new FileRunStore(dir);
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const run = createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-a",
    }).start("x", {
      plan: { subTasks: [{ id: "a", title: "A", description: "d", successCriteria: ["c"] }] },
    });
    const report = await run.result;
    const records = await store.read("run-a");
    expect(records.map((r) => r.type)).toEqual([
      "run-started",
      "plan-created",
      "sub-task-started",
      "attempt-finished",
      "sub-task-evaluated",
      "sub-task-completed",
      "run-finished",
    ]);
    expect(records.at(-1)).toMatchObject({
      type: "run-finished",
      report: { status: report.status },
    });
  });

  it("lets one process at a time run a run, and takes over a lock its dead holder left", async () => {
    const store = new FileRunStore(dir);
    const release = await store.lock("run1");
    await expect(store.lock("run1")).rejects.toSatisfy(
      (e) =>
        StoreError.isInstance(e) &&
        (e as Error).message.includes(`in use by process ${process.pid}`),
    );
    await release();
    const again = await store.lock("run1");
    await again();
    // A process that no longer exists (a kill -9) holds nothing.
    await writeFile(join(dir, "run1.lock"), JSON.stringify({ pid: 2_147_483_646 }));
    const taken = await store.lock("run1");
    await taken();
  });

  it("takes over a lock whose pid runs again as another process (a restarted container), not a live one", async () => {
    const store = new FileRunStore(dir);
    const lockFile = join(dir, "run1.lock");
    const mine = processStartTime(process.pid);
    expect(mine).toBeDefined();
    // pid 1 and this process's own pid, both alive, both started at another time than recorded.
    for (const pid of [1, process.pid]) {
      await writeFile(lockFile, JSON.stringify({ pid, startTime: "1" }));
      const release = await store.lock("run1");
      expect(JSON.parse(await readFile(lockFile, "utf8"))).toEqual({
        pid: process.pid,
        startTime: mine,
      });
      await release();
    }
    // The same pid and start time: the holder is alive and keeps the run.
    await writeFile(lockFile, JSON.stringify({ pid: 1, startTime: processStartTime(1) }));
    await expect(store.lock("run1")).rejects.toSatisfy(
      (e) => StoreError.isInstance(e) && (e as Error).message.includes("in use by process 1 "),
    );
    // A lock from before start times were recorded names a live pid only: still held.
    await writeFile(lockFile, JSON.stringify({ pid: 1 }));
    await expect(store.lock("run1")).rejects.toSatisfy((e) => StoreError.isInstance(e));
  });

  it("refuses to resume a run another manager is running on the same store", async () => {
    const store = new FileRunStore(dir);
    const controller = new AbortController();
    const executor = createFakeExecutor({ fallback: { type: "hang" } });
    const first = createManager({
      cwd: process.cwd(),
      executor,
      store,
      createRunId: () => "run-l",
    }).start("x", {
      plan: { subTasks: [{ id: "a", title: "A", description: "d", successCriteria: ["c"] }] },
      abortSignal: controller.signal,
    });
    await new Promise<void>((resolve) => first.on("sub-task-started", () => resolve()));
    const second = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor(),
      store,
    }).resume("run-l");
    await expect(second.result).rejects.toSatisfy(StoreError.isInstance);
    controller.abort();
    expect((await first.result).status).toBe("cancelled");
    // Released at the end: the run can be taken up now.
    const resumed = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      store,
    }).resume("run-l");
    expect((await resumed.result).status).toBe("completed");
  });
});
