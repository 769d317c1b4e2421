import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ExecutorError,
  FileRunStore,
  InvalidConfigError,
  InvalidRequestError,
  PlanValidationError,
  type RunEvent,
  StoreError,
  type SubTask,
  type TaskLedgerInput,
} from "@taskledger/core";
import { createOpencodeExecutor } from "@taskledger/executor";
import { createModel, type Provider } from "@taskledger/llm";
import {
  createFakeExecutor,
  type ModelServer,
  type ModelServerOptions,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli.js";
import { createManager } from "./runtime/create-manager.js";
import { captureIo, compatibleArgs, testScratch } from "./test-support/cli-harness.js";

const scratch = testScratch("all");
const tempDir = () => scratch.directory("bad-input-");

/** What a call threw (or rejected with); fails the test when it did not. */
async function thrown(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

const okPlan: TaskLedgerInput = {
  subTasks: [
    {
      id: "one",
      title: "One",
      description: "Do one thing.",
      successCriteria: ["done"],
      dependsOn: [],
    },
    {
      id: "two",
      title: "Two",
      description: "Do another thing.",
      successCriteria: ["done"],
      dependsOn: ["one"],
    },
  ],
};

function modelServer(replies: ModelServerOptions["replies"]): Promise<ModelServer> {
  return scratch.server({ replies });
}

describe.concurrent("bad input: a typed error that says what is wrong, and no partial state", () => {
  it.each([
    ["an empty request", "", /The request is empty/],
    ["a blank request", " \n\t ", /The request is empty/],
    ["a request over the size limit", "x".repeat(1001), /1001 characters; the limit is 1000/],
  ])("%s: InvalidRequestError at start, no store file", async (_, request, message) => {
    const storeDir = join(await tempDir(), "store");
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const manager = createManager({
      cwd: process.cwd(),
      executor,
      store: new FileRunStore(storeDir),
      maxRequestChars: 1000,
    });
    const error = await thrown(() => manager.start(request));
    expect(InvalidRequestError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "invalid-request",
      message: expect.stringMatching(message),
    });
    expect(existsSync(storeDir)).toBe(false);
    expect(executor.calls).toHaveLength(0);
  });

  it("a request over the size limit on the command line: exit 2, the limit named, no store written", async () => {
    const server = await modelServer([]);
    const storeDir = join(await tempDir(), "store");
    const t = captureIo();
    const code = await runCli(
      ["run", "x".repeat(1_000_001), ...compatibleArgs(server.openaiBaseURL), "--store", storeDir],
      t.io,
    );
    expect(code).toBe(2);
    expect(t.err()).toContain("the limit is 1000000 characters");
    expect(server.requests).toHaveLength(0);
    expect(existsSync(storeDir)).toBe(false);
  });

  it.each([
    [
      "a cycle",
      "cycle",
      {
        subTasks: [
          { ...okPlan.subTasks[0], dependsOn: ["two"] },
          { ...okPlan.subTasks[1], dependsOn: ["one"] },
        ],
      },
    ],
    [
      "an unknown dependency",
      "unknown-dependency",
      { subTasks: [okPlan.subTasks[0], { ...okPlan.subTasks[1], dependsOn: ["nowhere"] }] },
    ],
  ])(
    "a plan with %s, still there after the repair: PlanValidationError naming it, no sub-task run",
    async (_, kind, badPlan) => {
      const server = await modelServer(() => ({ text: JSON.stringify(badPlan) }));
      const storeDir = await tempDir();
      const executor = createFakeExecutor({ fallback: { type: "success" } });
      const events: RunEvent[] = [];
      const manager = createManager({
        cwd: process.cwd(),
        model: createModel({
          provider: "openai-compatible",
          model: "m",
          baseURL: server.openaiBaseURL,
        }),
        executor,
        store: new FileRunStore(storeDir),
        decompose: "always",
      });
      const run = manager.start("Do one thing and then another", {
        onEvent: (event) => events.push(event),
      });
      const error = await thrown(() => run.result);
      expect(PlanValidationError.isInstance(error)).toBe(true);
      const issues = (error as PlanValidationError).issues;
      expect(issues.map((issue) => issue.kind)).toContain(kind);
      expect((error as Error).message).toMatch(kind === "cycle" ? /cycle/i : /nowhere/);
      // Asked once, then once more with the problem spelled out (the repair).
      expect(server.requests).toHaveLength(2);
      expect(JSON.stringify(server.requests[1]?.body)).toContain("cannot be used");
      expect(executor.calls).toHaveLength(0);
      // The log says the run started, what the planner read of the project and why it failed,
      // and nothing ran in between.
      const stored = await new FileRunStore(storeDir).read(run.runId);
      const logged = ["run-started", "project-digested", "run-failed"];
      expect(stored.map((e) => e.type)).toEqual(logged);
      expect(stored.at(-1)).toMatchObject({ error: { code: "invalid-plan" } });
      expect(events.map((e) => e.type)).toEqual(logged);
    },
  );

  it("a store directory that cannot be created (under a regular file): StoreError naming the path, nothing run", async () => {
    const dir = await tempDir();
    const file = join(dir, "a-file");
    await writeFile(file, "not a directory\n");
    const storeDir = join(file, "store");
    const executor = createFakeExecutor({ fallback: { type: "success" } });
    const manager = createManager({
      cwd: process.cwd(),
      executor,
      store: new FileRunStore(storeDir),
    });
    const error = await thrown(() => manager.run("Do one thing"));
    expect(StoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "store-error" });
    expect((error as Error).message).toContain(storeDir);
    expect((error as Error).message).toMatch(/ENOTDIR/);
    expect(executor.calls).toHaveLength(0);
    expect(await readFile(file, "utf8")).toBe("not a directory\n");
    expect(await readdir(dir)).toEqual(["a-file"]);
  });

  it("a corrupted record in the middle of a log: StoreError naming the line; a torn last line is ignored", async () => {
    const storeDir = await tempDir();
    const store = new FileRunStore(storeDir);
    const manager = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      store,
    });
    const report = await manager.run("Do one thing");
    const path = join(storeDir, `${report.runId}.jsonl`);
    const lines = (await readFile(path, "utf8")).split("\n");
    expect(lines.length).toBeGreaterThan(4);

    // A torn tail (a crash mid-write) is not corruption: the records before it read back.
    await writeFile(path, `${lines.join("\n")}{"type":"sub-task-sta`);
    expect((await store.read(report.runId)).length).toBe(lines.length - 1);

    lines[2] = `${lines[2]?.slice(0, 20)}\u0000garbage`;
    await writeFile(path, lines.join("\n"));
    const error = await thrown(() => store.read(report.runId));
    expect(StoreError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(`${path} line 3 is corrupted`);
    // Resuming from that log refuses too, rather than running on a guessed state.
    const resumed = await thrown(() => manager.resume(report.runId).result);
    expect(StoreError.isInstance(resumed)).toBe(true);
  });

  it.each([
    [{ provider: "nope" as Provider, model: "m" }, /Unknown provider "nope"; expected one of/],
    [{ provider: "openai" as Provider, model: "" }, /A model id is required for provider "openai"/],
    [{ provider: "openai" as Provider, model: "  " }, /A model id is required/],
    [
      { provider: "anthropic" as Provider, model: "claude-x" },
      /No API key for anthropic: pass apiKey or set ANTHROPIC_API_KEY/,
    ],
    [{ provider: "google" as Provider, model: "g" }, /set GEMINI_API_KEY or GOOGLE_API_KEY/],
  ])("createModel(%j) with no key in env: InvalidConfigError %s", (options, message) => {
    let error: unknown;
    try {
      createModel({ ...options, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(InvalidConfigError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "invalid-config",
      message: expect.stringMatching(message),
    });
  });

  it("a missing key on the command line: exit 2 naming the variable, no store written, no request sent", async () => {
    const storeDir = join(await tempDir(), "store");
    const t = captureIo({ env: { CI: "true", OPENAI_API_KEY: "sk-for-the-wrong-provider-123" } });
    const code = await runCli(
      ["run", "Do one thing and then another", "--provider", "anthropic", "--store", storeDir],
      t.io,
    );
    expect(code).toBe(2);
    expect(t.err()).toContain("ANTHROPIC_API_KEY");
    expect(existsSync(storeDir)).toBe(false);
  });

  it("an --opencode-config that opencode rejects: its own message shown, one attempt, no retry or replan", async () => {
    const server = await modelServer((request) => {
      // Only the planner asks for a plan; the agent never reaches the model.
      if (JSON.stringify(request.body).includes('"subTasks"')) {
        return { text: JSON.stringify({ subTasks: [okPlan.subTasks[0]] }) };
      }
      return { status: 400, body: { error: { message: "no call expected" } } };
    });
    const configPath = join(await tempDir(), "opencode.json");
    await writeFile(
      configPath,
      JSON.stringify({ provider: scriptedOpencodeProvider(server), logLevel: "LOUD" }),
    );
    const t = captureIo({ env: { CI: "true" } });
    const code = await runCli(
      [
        "run",
        "Do one thing, then check it",
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        "scripted/test-model",
        "--opencode-config",
        configPath,
        "--cwd",
        await tempDir(),
        "--max-retries",
        "2",
        "--json",
      ],
      t.io,
    );
    expect(code).toBe(1);
    const report = JSON.parse(t.out()) as {
      status: string;
      subTasks: { status: string; attempts: number; reason: string }[];
    };
    expect(report.status).toBe("failed");
    expect(report.subTasks).toHaveLength(1);
    const [sub] = report.subTasks;
    expect(sub).toMatchObject({ status: "failed", attempts: 1 });
    // opencode's own words, naming the key and what it expected, without its colour codes.
    expect(sub?.reason).toContain("Configuration is invalid");
    expect(sub?.reason).toContain('Expected LogLevel, got "LOUD" logLevel');
    for (const sequence of ["\u001b", "\\u001b", "[91m"]) {
      expect(t.out() + t.err()).not.toContain(sequence);
    }
    expect(t.err()).toContain('Expected LogLevel, got "LOUD" logLevel');
    // One plan call: no replan, no judge for an attempt nothing can fix, no call from an agent.
    const kinds = server.requests.map((r) => {
      const body = JSON.stringify(r.body);
      return body.includes('"task_ledger"') ? "plan" : body.includes('"tools"') ? "agent" : "judge";
    });
    expect(kinds).toEqual(["plan"]);
  }, 120_000);

  it("a missing opencode binary: ExecutorError that says how to install it; the run reports it per sub-task", async () => {
    const binaryPath = join(await tempDir(), "no-such-opencode");
    const executor = createOpencodeExecutor({ model: "scripted/test-model", binaryPath });
    const subTask: SubTask = {
      id: "one",
      title: "One",
      description: "Do one thing.",
      successCriteria: ["done"],
      dependsOn: [],
      checks: [],
    };
    const error = await thrown(() =>
      executor.run("Do one thing.", {
        subTask,
        attempt: 1,
        cwd: tmpdir(),
        abortSignal: new AbortController().signal,
      }),
    );
    expect(ExecutorError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "executor-error" });
    expect((error as Error).message).toContain(
      `opencode binary not found or not executable: ${binaryPath}`,
    );
    expect((error as Error).message).toContain("npm install opencode-ai");

    // A run finds it before it pays for a plan: the executor's preflight.
    const server = await modelServer(() => ({ status: 400, body: { error: { message: "no" } } }));
    const model = createModel({
      provider: "openai-compatible",
      model: "m",
      baseURL: server.openaiBaseURL,
    });
    const refused = await thrown(() =>
      createManager({ cwd: process.cwd(), model, executor, maxRetries: 0 }).run("Do one thing", {
        cwd: tmpdir(),
      }),
    );
    expect(ExecutorError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toContain("npm install opencode-ai");
    expect(server.requests).toHaveLength(0);
  });

  it("an agent model opencode does not know: exit 2 naming it, before any model call", async () => {
    const server = await modelServer(() => ({ status: 400, body: { error: { message: "no" } } }));
    const t = captureIo({ env: { CI: "true" } });
    const argv = ["run", "Do one thing", ...compatibleArgs(server.openaiBaseURL), "--yes"];
    const code = await runCli(
      [...argv, "--agent-model", "nosuchprovider/nosuchmodel", "--cwd", await tempDir()],
      t.io,
    );
    expect(code, t.err()).toBe(2);
    expect(t.err()).toContain('agent model "nosuchprovider/nosuchmodel" is not one opencode knows');
    expect(server.requests).toHaveLength(0);
  }, 60_000);
});
