import { randomBytes } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { inspect } from "node:util";
import { FileRunStore, ModelError, type RunEvent, type TaskLedgerInput } from "@taskledger/core";
import { createModel } from "@taskledger/llm";
import {
  createFakeExecutor,
  type ModelServer,
  type RecordedRequest,
  type ScriptedReply,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli.js";
import { createManager } from "./runtime/create-manager.js";
import { captureIo, testScratch } from "./test-support/cli-harness.js";

// A key no provider would issue: if any byte of it shows up in an output, that output leaks keys.
const key = `sk-ant-PLANTED-${randomBytes(12).toString("hex")}`;

const plan: TaskLedgerInput = {
  subTasks: [
    {
      id: "write",
      title: "Write notes.txt",
      description: "Write notes.txt saying hello.",
      successCriteria: ["notes.txt exists"],
      dependsOn: [],
    },
  ],
};

const verdict = {
  completed: true,
  summary: "notes.txt was written.",
  outputData: "notes.txt: hello",
  feedback: "",
};

/** An Anthropic error body that echoes the key, as a misbehaving proxy or provider might. */
function echoingError(status: number, type: string): ScriptedReply {
  return {
    status,
    headers: { "retry-after": "0" },
    body: {
      type: "error",
      error: { type, message: `${type}: the key ${key} was refused (x-api-key: ${key})` },
    },
  };
}

type CallKind = "plan" | "judge" | "agent";

/** Which of the three callers sent a request: the planner and the judge ask for JSON by schema. */
function callKind(request: RecordedRequest): CallKind {
  const body = request.body as {
    output_config?: { format?: { schema?: unknown } };
    response_format?: { json_schema?: { schema?: unknown } };
  };
  const schema = body.output_config?.format?.schema ?? body.response_format?.json_schema?.schema;
  if (schema === undefined) return "agent";
  return JSON.stringify(schema).includes('"subTasks"') ? "plan" : "judge";
}

/** Answers each kind of call from its own list; the last entry of a list repeats. */
function repliesByKind(script: Record<CallKind, ScriptedReply[]>) {
  return (request: RecordedRequest): ScriptedReply => {
    const list = script[callKind(request)];
    return (list.length > 1 ? list.shift() : list[0]) ?? { status: 400 };
  };
}

/** Everything an error carries, as a host might log it: message, stack, cause chain, own fields. */
function everythingIn(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 10; depth++) {
    if (current instanceof Error) parts.push(current.message, current.stack ?? "");
    parts.push(inspect(current, { depth: 10, showHidden: true }));
    try {
      parts.push(JSON.stringify(current));
    } catch {
      // A cycle is not a leak; inspect above already covered it.
    }
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join("\n");
}

async function filesUnder(directory: string): Promise<string> {
  const names = await readdir(directory, { recursive: true }).catch(() => [] as string[]);
  const texts = await Promise.all(
    names.map((name) => readFile(join(directory, name), "utf8").catch(() => "")),
  );
  return names.join("\n") + texts.join("\n");
}

// The tests run at once: what they made goes after all of them.
const scratch = testScratch("all");

function server(script: Record<CallKind, ScriptedReply[]>): Promise<ModelServer> {
  return scratch.server({ replies: repliesByKind(script) });
}

function tempDir(prefix: string): Promise<string> {
  return scratch.directory(prefix);
}

/** A manager on `target` as a library host makes one: a fake executor, a store of its own. */
async function managerOn(
  target: ModelServer,
  options: Partial<Parameters<typeof createManager>[0]> = {},
) {
  const storeDir = await tempDir("secrets-store-");
  const events: RunEvent[] = [];
  const manager = createManager({
    cwd: process.cwd(),
    model: modelFor(target),
    executor: createFakeExecutor({ fallback: { type: "success" } }),
    store: new FileRunStore(storeDir),
    decompose: "always",
    ...options,
  });
  return { manager, storeDir, events, onEvent: (event: RunEvent) => events.push(event) };
}

/** The options that point `taskledger` at `target`'s Anthropic face. */
function anthropicArgs(target: ModelServer): string[] {
  return [
    "--provider",
    "anthropic",
    "--model",
    "claude-test",
    "--base-url",
    target.anthropicBaseURL,
  ];
}

function modelFor(target: ModelServer) {
  return createModel({
    provider: "anthropic",
    model: "claude-test",
    baseURL: target.anthropicBaseURL,
    env: { ANTHROPIC_API_KEY: key },
    backoff: { initialDelayMs: 1, maxDelayMs: 5 },
  });
}

/** The key reached the server in a header (this SDK sends it as a bearer token), so it could leak. */
function expectKeySent(target: ModelServer): void {
  expect(target.requests.length).toBeGreaterThan(0);
  for (const request of target.requests.filter((r) => r.face === "anthropic")) {
    expect(JSON.stringify(request.headers)).toContain(key);
  }
}

describe.concurrent("a planted API key appears nowhere", () => {
  it("in the events, the store or the report of a run whose provider echoes it in 500 and 429 bodies", async () => {
    const target = await server({
      plan: [echoingError(500, "api_error"), { text: JSON.stringify(plan) }],
      judge: [echoingError(429, "rate_limit_error"), { text: JSON.stringify(verdict) }],
      agent: [],
    });
    const { manager, storeDir, events, onEvent } = await managerOn(target, {
      executor: createFakeExecutor({ fallback: { type: "success", text: "Wrote notes.txt." } }),
    });
    const report = await manager.run("Write notes.txt saying hello, then check it", { onEvent });
    expect(report.status).toBe("completed");
    // Both echoing errors were answered and retried through.
    expect(target.requests.map(callKind)).toEqual(["plan", "plan", "judge", "judge"]);
    expectKeySent(target);
    expect(events.length).toBeGreaterThan(3);
    expect(JSON.stringify(events)).not.toContain(key);
    expect(JSON.stringify(report)).not.toContain(key);
    const stored = await filesUnder(storeDir);
    expect(stored).toContain("run-finished");
    expect(stored).not.toContain(key);
    // No record lost either: every event announced (but the agents' own stream) is in the log.
    const announced = events.filter((e) => e.type !== "agent-event");
    expect(await new FileRunStore(storeDir).read(report.runId)).toEqual(
      JSON.parse(JSON.stringify(announced)),
    );
  });

  it("in the error, the run-failed record and the events when the provider refuses it with a 401 that quotes it", async () => {
    const target = await server({
      plan: [echoingError(401, "authentication_error")],
      judge: [],
      agent: [],
    });
    const { manager, storeDir, events, onEvent } = await managerOn(target);
    const run = manager.start("Write notes.txt saying hello, then check it", { onEvent });
    const error = await run.result.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).statusCode).toBe(401);
    expect((error as ModelError).message).toContain("401");
    expectKeySent(target);
    expect(everythingIn(error)).not.toContain(key);
    expect(events.map((e) => e.type)).toContain("run-failed");
    expect(JSON.stringify(events)).not.toContain(key);
    const stored = await filesUnder(storeDir);
    expect(stored).toContain("run-failed");
    expect(stored).not.toContain(key);
  });

  it("in the error of an OpenAI-compatible server that quotes a key shaped like no provider's", async () => {
    const plain = `PLANTED-plain-${randomBytes(12).toString("hex")}`;
    const target = await scratch.server({
      replies: [{ status: 401, body: { error: { message: `bad token ${plain}`, code: plain } } }],
    });
    const model = createModel({
      provider: "openai-compatible",
      model: "local",
      baseURL: target.openaiBaseURL,
      apiKey: plain,
    });
    const manager = createManager({
      cwd: process.cwd(),
      model,
      executor: createFakeExecutor({ fallback: { type: "success" } }),
      decompose: "always",
    });
    const error = await manager.plan("Write notes.txt saying hello, then check it").then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(ModelError.isInstance(error)).toBe(true);
    expect(JSON.stringify(target.requests[0]?.headers)).toContain(plain);
    expect(everythingIn(error)).toContain("401");
    expect(everythingIn(error)).not.toContain(plain);
  });

  it("in the reason a sub-task failed for, when the judge's provider quotes it in a 401", async () => {
    const target = await server({
      plan: [{ text: JSON.stringify(plan) }],
      judge: [echoingError(401, "authentication_error")],
      agent: [],
    });
    const { manager, storeDir, events, onEvent } = await managerOn(target, { maxRetries: 0 });
    const report = await manager.run("Write notes.txt saying hello, then check it", { onEvent });
    expect(report.status).toBe("failed");
    const failed = report.subTasks.find((s) => s.id === "write");
    expect(failed?.status).toBe("failed");
    expectKeySent(target);
    // The judge's error is told (status and provider), only without the key.
    expect(JSON.stringify(events)).toContain("401");
    expect(JSON.stringify(events)).toContain("[redacted]");
    expect(JSON.stringify(events)).not.toContain(key);
    expect(JSON.stringify(report)).not.toContain(key);
    expect(await filesUnder(storeDir)).not.toContain(key);
  });

  it("in stdout, stderr, the --json report and the store of `taskledger run` on the real opencode CLI", async () => {
    const target = await server({
      plan: [echoingError(500, "api_error"), { text: JSON.stringify(plan) }],
      judge: [echoingError(429, "rate_limit_error"), { text: JSON.stringify(verdict) }],
      agent: [{ text: "Wrote notes.txt." }],
    });
    const storeDir = await tempDir("secrets-store-");
    const cwd = await tempDir("secrets-cwd-");
    const configDir = await tempDir("secrets-config-");
    const configPath = join(configDir, "opencode.json");
    await writeFile(configPath, JSON.stringify({ provider: scriptedOpencodeProvider(target) }));
    const t = captureIo({ env: { CI: "true", ANTHROPIC_API_KEY: key } });
    const code = await runCli(
      [
        "run",
        "Write notes.txt saying hello, then check it",
        ...anthropicArgs(target),
        "--agent-model",
        "scripted/test-model",
        "--opencode-config",
        configPath,
        "--cwd",
        cwd,
        "--store",
        storeDir,
        "--max-retries",
        "0",
        "--json",
      ],
      t.io,
    );
    const report = JSON.parse(t.out()) as { status: string };
    expect({ code, status: report.status }).toEqual({ code: 0, status: "completed" });
    expectKeySent(target);
    expect(t.out()).not.toContain(key);
    expect(t.err()).not.toContain(key);
    const stored = await filesUnder(storeDir);
    expect(stored).toContain("run-finished");
    expect(stored).not.toContain(key);
    // The agents' working directory holds nothing of it either (opencode was never given it).
    expect(await filesUnder(cwd)).not.toContain(key);
  }, 120_000);

  it("in stdout and stderr of `taskledger plan` when the provider refuses the key with a 401 that quotes it", async () => {
    const target = await server({
      plan: [echoingError(401, "authentication_error")],
      judge: [],
      agent: [],
    });
    const t = captureIo({ env: { CI: "true", ANTHROPIC_API_KEY: key } });
    const code = await runCli(
      ["plan", "Write notes.txt saying hello, then check it", ...anthropicArgs(target), "--json"],
      t.io,
    );
    expect(code).toBe(1);
    expectKeySent(target);
    expect(t.err()).toContain("401");
    expect(t.out() + t.err()).not.toContain(key);
  });
});
