import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyUsage, type RunEvent } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { RunLog } from "./run-log.js";

const base = { runId: "r1", time: "2026-11-25T19:00:00.000Z" };

describe("RunLog", () => {
  it("keeps, on the attempt that made them, the changes left out because they were outside the run's directory", async () => {
    const ledger = {
      subTasks: [
        {
          id: "a",
          title: "A",
          description: "d",
          successCriteria: ["c"],
          dependsOn: [],
          checks: [],
        },
      ],
    };
    const records = [
      { ...base, seq: 0, type: "run-started", request: "x", cwd: "/repo/packages/app" },
      {
        ...base,
        seq: 1,
        type: "plan-created",
        ledger,
        decomposed: false,
        repaired: false,
        usage: emptyUsage(),
      },
      { ...base, seq: 2, type: "sub-task-started", subTaskId: "a", attempt: 1, promptTokens: 1 },
      {
        ...base,
        seq: 3,
        type: "attempt-finished",
        subTaskId: "a",
        attempt: 1,
        result: {
          outcome: "finished",
          finalText: "done",
          toolCalls: [],
          stepFinishReasons: ["stop"],
          filesChanged: ["packages/app/inside.txt"],
          outsideCwd: { paths: ["ROOT_CONFIG.txt"], count: 3 },
          refusals: [
            { kind: "write", target: "/home/u/.bashrc", detail: "openat" },
            { kind: "network", target: "example.com:443" },
          ],
          usage: emptyUsage(),
          durationMs: 1,
        },
      },
    ] as RunEvent[];
    const path = join(await mkdtemp(join(tmpdir(), "taskledger-run-log-")), "r1.jsonl");
    await writeFile(path, records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const log = new RunLog(path, "r1");
    await log.readMore();

    expect(log.error).toBeUndefined();
    const [attempt] = log.attempts.get("a")!;
    expect(attempt).toMatchObject({
      filesChanged: ["packages/app/inside.txt"],
      outsideCwd: { paths: ["ROOT_CONFIG.txt"], count: 3 },
      refusals: [
        { kind: "write", target: "/home/u/.bashrc" },
        { kind: "network", target: "example.com:443" },
      ],
    });
    expect(log.state.subTasks.get("a")!.refusals).toEqual([
      { attempt: 1, kind: "write", target: "/home/u/.bashrc" },
      { attempt: 1, kind: "network", target: "example.com:443" },
    ]);
    expect(log.state.subTasks.get("a")!.outsideCwd).toEqual([
      { attempt: 1, paths: ["ROOT_CONFIG.txt"], count: 3 },
    ]);
  });
});
