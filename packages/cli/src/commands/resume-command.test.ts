import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createModelServer } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { demoPlan, demoRequest } from "../demo/demo-scenario.js";
import type { JsonReport } from "../output/json-report.js";
import { captureIo, compatibleArgs } from "../test-support/cli-harness.js";

const fixture = resolve(
  import.meta.dirname,
  "../../../core/src/log/fixtures/v1-finished-run.jsonl",
);
const host = {
  provider: "openai-compatible",
  model: "logged-manager",
  baseURL: "http://127.0.0.1:9/v1",
  agentModel: "taskledger-compatible/logged-agent",
};

/** A store holding the finished format-1 fixture, optionally rewritten as a format-2 log with settings. */
async function storeWith(withSettings: boolean): Promise<string> {
  const store = await mkdtemp(join(tmpdir(), "taskledger-resume-"));
  const lines = (await readFile(fixture, "utf8")).split("\n").filter(Boolean);
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  if (withSettings) {
    records[0] = {
      ...records[0],
      settings: {
        concurrency: 1,
        maxRetries: 1,
        maxSubTasks: 20,
        contextTokenBudget: 4000,
        budget: {},
        decompose: "auto",
        alternateAgentModels: ["alt/model"],
        replan: { enabled: true, maxPerSubTask: 1, maxPerRun: 3 },
        host,
      },
    };
    for (const record of records) record.v = 2;
  }
  await writeFile(
    join(store, "v1-run.jsonl"),
    `${records.map((r) => JSON.stringify(r)).join("\n")}\n`,
  );
  return store;
}

describe("taskledger resume", () => {
  it("needs only --store: a finished run's own report, with --yes accepted", async () => {
    const store = await storeWith(true);
    const t = captureIo();
    const code = await runCli(["resume", "v1-run", "--store", store, "--yes", "--json"], t.io);
    expect(code, t.err()).toBe(0);
    expect(t.err()).toContain("Run v1-run had already finished.");
    expect(t.err()).not.toContain("note:");
    const report = JSON.parse(t.out()) as JsonReport;
    expect(report.status).toBe("completed");
    expect(report.subTasks.map((s) => s.id)).toEqual(["a", "b", "c", "d", "b1", "c1"]);
  });

  it("an option given again overrides the logged one, with a one-line notice", async () => {
    const store = await storeWith(true);
    const t = captureIo();
    const code = await runCli(
      ["resume", "v1-run", "--store", store, "--concurrency", "2", "--cwd", tmpdir(), "--json"],
      t.io,
    );
    expect(code, t.err()).toBe(0);
    const notes = t
      .err()
      .split("\n")
      .filter((line) => line.startsWith("note:"));
    expect(notes).toEqual([
      "note: --cwd given: it overrides what the run was started with",
      "note: --concurrency given: it overrides what the run was started with",
    ]);
  });

  it("a log from before settings were logged resumes with the options given, and says so", async () => {
    const store = await storeWith(false);
    const t = captureIo();
    const code = await runCli(
      ["resume", "v1-run", "--store", store, ...compatibleArgs(host.baseURL)],
      t.io,
    );
    expect(code, t.err()).toBe(0);
    expect(t.out()).toContain("does not hold its options");
  });

  it("an unknown run is an error naming it", async () => {
    const store = await storeWith(true);
    const t = captureIo();
    expect(await runCli(["resume", "nope", "--store", store], t.io)).toBe(1);
    expect(t.err()).toContain('no records of run "nope"');
  });
});

describe("taskledger run checks its directory first", () => {
  it("a --cwd that does not exist or is a file is a usage error (exit 2) naming it, with no model call", async () => {
    const server = await createModelServer({ replies: [] });
    try {
      const root = await mkdtemp(join(tmpdir(), "taskledger-cwd-"));
      await mkdir(join(root, "dir"));
      await writeFile(join(root, "file"), "x");
      for (const cwd of [join(root, "missing"), join(root, "file")]) {
        const t = captureIo();
        const code = await runCli(
          [
            "run",
            "Port this project from Python 2 to Python 3, then test it",
            "--yes",
            ...compatibleArgs(server.openaiBaseURL),
            "--cwd",
            cwd,
          ],
          t.io,
        );
        expect(code, t.err()).toBe(2);
        expect(t.err()).toContain(cwd);
      }
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });
});

describe("--max-sub-tasks with resume", () => {
  it("is logged with the run; a resume plans with the logged value, or with one given again", async () => {
    const server = await createModelServer({ replies: [{ hang: true }] });
    const store = await mkdtemp(join(tmpdir(), "taskledger-max-"));
    // An agent model opencode knows: its preflight refuses one it does not, before planning.
    const args = [
      ...compatibleArgs(server.openaiBaseURL),
      "--agent-model",
      "taskledger-compatible/m",
      "--store",
      store,
      "--yes",
    ];
    /** Runs the CLI until the model is called for the `calls`-th time, then presses Ctrl-C. */
    const cancelledAtCall = async (argv: string[], calls: number) => {
      const stop = new AbortController();
      const t = captureIo({ signal: stop.signal });
      let ended = false;
      const exit = runCli(argv, t.io).finally(() => {
        ended = true;
      });
      while (!ended && server.requests.length < calls) await new Promise((r) => setTimeout(r, 20));
      stop.abort();
      expect(await exit, t.err()).toBe(130);
    };
    const system = (n: number) => JSON.stringify(server.requests[n]?.body);
    try {
      await cancelledAtCall(["run", demoRequest, "--max-sub-tasks", "2", ...args], 1);
      const [file] = await readdir(store);
      const runId = file!.replace(/\.jsonl$/, "");
      const first = JSON.parse((await readFile(join(store, file!), "utf8")).split("\n")[0]!);
      expect(first.settings.maxSubTasks).toBe(2);
      expect(system(0)).toContain("at most 2");

      server.push({ hang: true });
      await cancelledAtCall(["resume", runId, ...args], 2);
      expect(system(1)).toContain("at most 2");

      server.push({ text: JSON.stringify(demoPlan) }, { text: JSON.stringify(demoPlan) });
      const t = captureIo();
      const code = await runCli(["resume", runId, "--max-sub-tasks", "1", ...args], t.io);
      expect(code).toBe(1);
      expect(t.out()).toContain("note: --max-sub-tasks given: it overrides");
      expect(system(2)).toContain("at most 1");
      expect(t.out() + t.err()).toContain("the plan has 3 sub-tasks; the limit is 1");
      expect(server.requests).toHaveLength(4);
    } finally {
      await server.close();
      await rm(store, { recursive: true, force: true });
    }
  });
});
