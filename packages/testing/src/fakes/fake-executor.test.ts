import type { ExecuteOptions, SubTask } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { createFakeExecutor } from "./fake-executor.js";

const subTask = (id: string): SubTask => ({
  id,
  title: id,
  description: id,
  successCriteria: ["done"],
  dependsOn: [],
  checks: [],
});
const options = (id: string, signal = new AbortController().signal): ExecuteOptions => ({
  subTask: subTask(id),
  attempt: 1,
  cwd: "/tmp",
  abortSignal: signal,
});

describe("FakeExecutor", () => {
  it("plays each sub-task's script in order", async () => {
    const executor = createFakeExecutor({
      script: {
        a: [
          { type: "truncated", text: "partial" },
          { type: "success", text: "ok" },
          { type: "error", error: "429" },
        ],
      },
    });
    expect((await executor.run("p", options("a"))).outcome).toBe("truncated");
    expect(await executor.run("p", options("a"))).toMatchObject({
      outcome: "finished",
      finalText: "ok",
      stepFinishReasons: ["stop"],
    });
    expect(await executor.run("p", options("a"))).toMatchObject({ outcome: "error", error: "429" });
    await expect(executor.run("p", options("a"))).rejects.toMatchObject({
      code: "unexpected-call",
    });
  });

  it("crashes when told to and forwards agent events", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "crash", message: "ENOENT" }], b: [{ type: "success" }] },
    });
    await expect(executor.run("p", options("a"))).rejects.toThrow("ENOENT");
    const events: string[] = [];
    await executor.run("p", { ...options("b"), onEvent: (e) => events.push(e.type) });
    expect(events).toEqual(["step-start", "text", "step-finish"]);
  });

  it("a hanging attempt ends as cancelled when aborted, and delays honour abort", async () => {
    const executor = createFakeExecutor({
      script: { a: [{ type: "hang" }], b: [{ type: "success", delayMs: 60_000 }] },
    });
    const controller = new AbortController();
    const hanging = executor.run("p", options("a", controller.signal));
    const delayed = executor.run("p", options("b", controller.signal));
    expect(executor.active).toBe(2);
    controller.abort();
    expect((await hanging).outcome).toBe("cancelled");
    expect((await delayed).outcome).toBe("cancelled");
    expect(executor.active).toBe(0);
    expect(executor.maxConcurrent).toBe(2);
  });
});
