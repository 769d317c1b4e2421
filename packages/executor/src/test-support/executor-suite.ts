// The behaviour every executor must share, as one function: an executor's test file calls
// `executorSuite` with its factory and what its agent says on the wire, and passes or fails the
// same cases as the others. All cases of one call share one scripted model server; each case's
// requests are routed to its own script by a tag in the prompt.
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentEvent,
  type AttemptProcess,
  createManager,
  type ExecuteOptions,
  type Executor,
  ExecutorError,
  type ProviderLimit,
} from "@taskledger/core";
import { listDescendants } from "@taskledger/process";
import {
  afterToolResult,
  alive,
  commandLineOf,
  createModelServer,
  insufficientQuotaError,
  type ModelServer,
  overloadedError,
  pollUntil,
  type RecordedRequest,
  type ScriptedHttpError,
  type ScriptedReply,
} from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subTask } from "./executor-harness.js";
import { sandboxCase } from "./sandbox-case.js";
import type { SuiteAgent, SuiteOptions, SuiteServer } from "./suite-agent.js";

type Steps = ScriptedReply[] | ((request: RecordedRequest) => ScriptedReply);

/** Registers the shared executor cases under `describe(name)`. */
export function executorSuite(name: string, agent: SuiteAgent): void {
  describe.concurrent(name, { timeout: 150_000 }, () => {
    let shared: ModelServer;
    const cases = new Map<string, { steps: Steps; view: SuiteServer }>();
    const cleanups: (() => Promise<unknown>)[] = [];
    beforeAll(async () => {
      shared = await createModelServer({
        replies: (request) => {
          const tag = /\[case-(\d+)\]/.exec(JSON.stringify(request.body))?.[0];
          const entry = tag === undefined ? undefined : cases.get(tag);
          if (!entry)
            return { status: 400, body: { error: { message: "no case for this request" } } };
          entry.view.requests.push(request);
          const next = Array.isArray(entry.steps) ? entry.steps.shift() : entry.steps(request);
          if (next) return next;
          entry.view.extra.push(request);
          return { status: 400, body: { error: { message: "no scripted step left" } } };
        },
      });
    });
    afterAll(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
      await shared?.close();
    });

    let count = 0;
    /** A case's tag (to put in its prompt) and its view of the shared server. */
    const scripted = (steps: Steps) => {
      const tag = `[case-${++count}]`;
      const view: SuiteServer = {
        url: shared.url,
        openaiBaseURL: shared.openaiBaseURL,
        anthropicBaseURL: shared.anthropicBaseURL,
        requests: [],
        extra: [],
      };
      cases.set(tag, { steps, view });
      return { tag, server: view };
    };
    const workDir = async () => {
      const dir = await mkdtemp(join(tmpdir(), "executor-suite-"));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    };
    // Cases reach the shared model server by their tag, so a reusable executor's servers (the
    // costly part of a case: an agent start) serve every case on the default options. An executor
    // of other options serves one attempt and is closed when it ends: an idle agent server costs
    // CPU until it is stopped. `own`: one case's, kept to the end (the case checks its server).
    let common: Executor | undefined;
    const make = (server: SuiteServer, options: SuiteOptions = {}, own = false) => {
      const settings = { timeoutMs: 60_000, ...options };
      const reusable = agent.reusable && !own && Object.keys(options).length === 0;
      if (reusable && common) return common;
      const executor = agent.make(server, settings);
      if (reusable) common = executor;
      if (executor.close) cleanups.push(() => executor.close?.() ?? Promise.resolve());
      if (agent.reusable && !reusable && !own && executor.close) {
        const run = executor.run.bind(executor);
        executor.run = (prompt, attempt) => run(prompt, attempt).finally(() => executor.close?.());
      }
      return executor;
    };
    const runOptions = (cwd: string, extra: Partial<ExecuteOptions> = {}): ExecuteOptions => ({
      subTask,
      attempt: 1,
      cwd,
      abortSignal: new AbortController().signal,
      ...extra,
    });
    const { expects } = agent;

    it("writes a file through its write tool and finishes with text, usage and events", async () => {
      const cwd = await workDir();
      const { tag, server } = scripted([
        { toolCalls: [agent.write(cwd, "hello.txt", "hi there\n")] },
        { text: "I wrote hello.txt.", usage: { inputTokens: 50, outputTokens: 6 } },
      ]);
      const events: AgentEvent[] = [];
      const result = await make(server).run(
        `Write hello.txt ${tag}`,
        runOptions(cwd, { onEvent: (e) => events.push(e) }),
      );
      expect(result.outcome).toBe("finished");
      expect(await readFile(join(cwd, "hello.txt"), "utf8")).toBe("hi there\n");
      expect(result.finalText).toBe("I wrote hello.txt.");
      expect(result.stepFinishReasons).toEqual(["tool-calls", "stop"]);
      if (expects.writeListsFile) expect(result.filesChanged).toEqual(["hello.txt"]);
      expect(result.toolCalls).toEqual([expect.objectContaining({ status: "completed" })]);
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(result.details).toMatchObject({ exitCode: 0, permissionRejected: false });
      // `tool-started` is an early notice, there only when the call was seen running (timing).
      const kinds = events.map((e) => e.type);
      expect(kinds.filter((type) => type !== "unknown" && type !== "tool-started")).toEqual([
        "step-start",
        "tool-use",
        "step-finish",
        "step-start",
        "text",
        "step-finish",
      ]);
      expect(server.requests).toHaveLength(2);
      expect(server.extra).toHaveLength(0);
    });

    // The cases that only classify an answer, run once per reader (`answersReadAs`).
    const classifies = it.skipIf(agent.answersReadAs !== undefined);

    classifies("reports a length finish as truncated", async () => {
      const cut = { text: "The first half of", finishReason: "length" } as const;
      const { tag, server } = scripted(
        Array.from({ length: expects.lengthContinues + 1 }, () => ({ ...cut })),
      );
      const result = await make(server).run(`Explain ${tag}`, runOptions(await workDir()));
      expect(result.outcome).toBe("truncated");
      expect(result.stepFinishReasons.at(-1)).toBe("length");
    });

    it.runIf(expects.perStepUsage && agent.answersReadAs === undefined)(
      "reports a near-empty stop after tool use as truncated",
      async () => {
        const cwd = await workDir();
        // Twice: Claude Code asks again once after an empty answer.
        const empty = { text: "", usage: { inputTokens: 10, outputTokens: 2 } };
        const { tag, server } = scripted([
          { toolCalls: [agent.write(cwd, "a.txt", "a")] },
          { ...empty },
          { ...empty },
        ]);
        const result = await make(server).run(`Write a.txt ${tag}`, runOptions(cwd));
        expect(result.outcome).toBe("truncated");
      },
    );

    // A provider's error, after the agent's own retries (made fast by `retry-after-ms: 10`); the
    // last answer, the one the agent reports, carries the case's own headers.
    const fast = { "retry-after-ms": "10", "retry-after": "0" };
    // The 429 runs on every agent: how a limit and its headers come out of the agent is not only
    // reading (an exit code, a session's error event).
    const providerErrors: {
      name: string;
      last: ScriptedHttpError;
      limit?: { kind: ProviderLimit["kind"]; retryAfterMs?: number };
      everyAgent?: boolean;
    }[] = [
      { name: "ends as error on a provider 500", last: { status: 500, headers: fast } },
      {
        name: "ends as rate-limited on a provider 429 with retry-after-ms",
        last: { status: 429, headers: fast },
        limit: { kind: "rate-limit", retryAfterMs: 10 },
        everyAgent: true,
      },
      {
        name: "ends as rate-limited, overloaded, on a provider 529 with Retry-After in seconds",
        last: overloadedError({ "retry-after": "2" }),
        limit: { kind: "overloaded", retryAfterMs: 2000 },
      },
      {
        name: "ends as rate-limited, quota, on insufficient_quota without Retry-After",
        last: insufficientQuotaError(),
        limit: { kind: "quota" },
      },
    ];
    for (const { name: title, last, limit, everyAgent } of providerErrors) {
      (everyAgent ? it : classifies)(`${title} after the agent's own retries`, async () => {
        const retries = Array.from({ length: expects.providerErrorRequests - 1 }, () => ({
          ...last,
          headers: fast,
        }));
        const { tag, server } = scripted([...retries, ...Array.from({ length: 4 }, () => last)]);
        const result = await make(server).run(`Hi ${tag}`, runOptions(await workDir()));
        expect(result.details).toMatchObject({ exitCode: expects.providerErrorExit });
        expect(server.requests).toHaveLength(expects.providerErrorRequests);
        // Neither the agent's doing nor a lost worker, and worth another try once the window opens.
        expect(result.retryable).toBeUndefined();
        expect(result.infrastructureError).toBeUndefined();
        const statusCode = expects.statusCodeOf(last.status, limit?.kind);
        if (statusCode !== undefined) expect(result.details?.statusCode).toBe(statusCode);
        if (!limit) {
          expect(result.outcome).toBe("error");
          expect(result.limit).toBeUndefined();
          return;
        }
        expect(result.outcome).toBe("rate-limited");
        expect(result.limit).toEqual({
          kind: limit.kind,
          provider: expects.limitProvider,
          message: expect.any(String),
          ...(statusCode === undefined ? {} : { statusCode }),
          ...(expects.retryAfter && limit.retryAfterMs !== undefined
            ? { retryAfterMs: limit.retryAfterMs }
            : {}),
        });
        expect(result.limit?.message).not.toMatch(/\n/);
        expect(result.error).toMatch(
          /model provider \(\S+\) (is rate-limiting|is overloaded|refused for quota or billing)/,
        );
        expect(result.error).toContain(result.limit?.message);
      });
    }

    it("a command nobody may approve is not run", async () => {
      const outside = await workDir();
      const target = join(outside, "escaped.txt");
      const { tag, server } = scripted([
        { toolCalls: [agent.shell(`echo escaped > ${target}`)] },
        { text: "Done." },
      ]);
      const result = await make(server, { askForCommands: true }).run(
        `Run echo ${tag}`,
        runOptions(await workDir()),
      );
      expect(existsSync(target)).toBe(false);
      expects.commandRefused(result, server.requests);
    });

    it("a read-only attempt changes nothing: its write is refused, and the agent is told", async () => {
      const cwd = await workDir();
      const { tag, server } = scripted([
        { toolCalls: [agent.write(cwd, "a.txt", "written")] },
        { text: "Findings: src/ holds the code." },
      ]);
      const result = await make(server).run(
        `Look around ${tag}`,
        runOptions(cwd, { readOnly: true }),
      );
      expect(existsSync(join(cwd, "a.txt"))).toBe(false);
      expect(result.outcome).toBe("finished");
      expect(result.finalText).toBe("Findings: src/ holds the code.");
      expect(JSON.stringify(server.requests.at(-1)?.body)).toMatch(expects.readOnlyRefusal);
    });

    it("ends a run whose stream never gives a finish reason", async () => {
      const { tag, server } = scripted(Array.from({ length: 20 }, () => agent.noFinishStream));
      const result = await make(server).run(`Hi ${tag}`, runOptions(await workDir()));
      expect(result.outcome).toBe("error");
      if (expects.noFinishStop) expect(result.details?.stoppedBy).toBe(expects.noFinishStop);
    });

    it("abort ends the agent and the commands it started, leaving no process", async () => {
      const { tag, server } = scripted([
        { toolCalls: [agent.shell("echo started > started.txt; sleep 300")] },
      ]);
      const cwd = await workDir();
      const controller = new AbortController();
      // Every process the executor saw: a sandbox's pid namespace makes the tool's own `$$` useless.
      const seen: AttemptProcess[] = [];
      // Its own executor: no other case's tools may run under the server it checks.
      const running = make(server, {}, true).run(
        `Wait ${tag}`,
        runOptions(cwd, { abortSignal: controller.signal, onProcess: (p) => seen.push(p) }),
      );
      await pollUntil(
        async () => existsSync(join(cwd, "started.txt")),
        (found) => found,
        2400,
      );
      await pollUntil(
        async () => seen.some((p) => commandLineOf(p.pid).startsWith("sleep")),
        (found) => found,
      );
      controller.abort();
      const result = await running;
      expect(result.outcome).toBe("cancelled");
      const pid = result.details?.pid as number;
      expect(pid).toBeGreaterThan(0);
      if (expects.leaderExits) expect(alive(pid)).toBe(false);
      else expect(listDescendants(pid).filter((p) => alive(p.pid))).toEqual([]);
      expect(seen.filter((p) => p.pid !== pid && alive(p.pid))).toEqual([]);
    });

    it("times out a hung model call and leaves no process", async () => {
      const { tag, server } = scripted([{ hang: true }]);
      const result = await make(server, { timeoutMs: expects.hangTimeoutMs }).run(
        `Hi ${tag}`,
        runOptions(await workDir()),
      );
      expect(result.outcome).toBe("timeout");
      expect(result.details).toMatchObject({ stoppedBy: "timeout" });
      if (expects.leaderExits) expect(alive(result.details?.pid as number)).toBe(false);
      expect(server.requests.length).toBeLessThanOrEqual(1);
    });

    it("runs three attempts in parallel in separate directories without interfering", async () => {
      const names = ["A", "B", "C"];
      const dirs = await Promise.all(names.map(() => workDir()));
      const { tag, server } = scripted((request) => {
        const name = /task-([ABC])/.exec(JSON.stringify(request.body))?.[1] ?? "X";
        if (afterToolResult(request)) return { text: `Task ${name} done.` };
        const cwd = dirs[names.indexOf(name)] ?? "";
        return { toolCalls: [agent.write(cwd, `${name}.txt`, name)] };
      });
      const executor = make(server);
      const results = await Promise.all(
        names.map((name, i) =>
          executor.run(`Do task-${name} ${tag}`, runOptions(dirs[i] as string)),
        ),
      );
      for (const [i, name] of names.entries()) {
        expect(results[i]).toMatchObject({ outcome: "finished", finalText: `Task ${name} done.` });
        expect(await readdir(dirs[i] as string)).toEqual([`${name}.txt`]);
      }
      expect(new Set(results.map((r) => r.details?.sessionId)).size).toBe(3);
      expect(server.requests).toHaveLength(6);
    });

    it("makes no network request but to the model server", async () => {
      const { tag, server } = scripted([{ text: "Hello." }]);
      // Every request the agent sends through a proxy is recorded here and refused.
      const attempts: string[] = [];
      const proxy = createServer((req, res) => {
        attempts.push(`${req.method} ${req.url}`);
        res.writeHead(502).end();
      });
      proxy.on("connect", (req, socket) => {
        attempts.push(`CONNECT ${req.url}`);
        socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
      });
      await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise((resolve) => proxy.close(() => resolve(undefined))));
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const env = {
        HTTP_PROXY: proxyUrl,
        HTTPS_PROXY: proxyUrl,
        http_proxy: proxyUrl,
        https_proxy: proxyUrl,
        NO_PROXY: "127.0.0.1,localhost",
      };
      const result = await make(server, { env }).run(`Hi ${tag}`, runOptions(await workDir()));
      expect(result.outcome).toBe("finished");
      expect(server.requests).toHaveLength(1);
      expect(attempts).toEqual([]);
    });

    it("caps the steps of an agent that never stops calling tools", async () => {
      const again = () => ({ toolCalls: [agent.shell("echo again")] });
      const { tag, server } = scripted(Array.from({ length: 10 }, again));
      const result = await make(server, { maxSteps: 2 }).run(
        `Loop ${tag}`,
        runOptions(await workDir()),
      );
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ stoppedBy: "step-limit" });
      expect(result.stepFinishReasons.slice(0, 3)).toEqual([
        "tool-calls",
        "tool-calls",
        "tool-calls",
      ]);
      // Stopped after its third step; while it is being stopped a loaded machine lets it finish
      // a step or two more (Claude Code, in CI: 5), never the ten it was given.
      expect(result.stepFinishReasons.length).toBeLessThanOrEqual(6);
      expect(server.requests.length).toBeLessThan(10);
      if (expects.leaderExits) expect(alive(result.details?.pid as number)).toBe(false);
    });

    it("a config the agent refuses ends the attempt with its own message, not retryable", async () => {
      const { tag, server } = scripted([]);
      const result = await make(server, { badConfig: true }).run(
        `Hi ${tag}`,
        runOptions(await workDir()),
      );
      expect(result).toMatchObject({ outcome: "error", retryable: false });
      expect(result.error).toMatch(expects.badConfigError);
      expect(server.requests).toHaveLength(0);
    });

    it("a missing binary is a clear error that says how to install the agent", async () => {
      const { tag, server } = scripted([]);
      const executor = make(server, { binaryPath: "/nonexistent/agent" });
      const error = await executor
        .run(`Hi ${tag}`, runOptions(await workDir()))
        .catch((e: unknown) => e);
      expect(ExecutorError.isInstance(error)).toBe(true);
      expect(String((error as Error).message)).toContain(expects.installHint);
    });

    it("an attempt's own agentModel is the model that answers it", async () => {
      const { tag, server } = scripted([{ text: "From the other model." }]);
      const executor = make(server);
      const result = await executor.run(
        `Hi ${tag}`,
        runOptions(await workDir(), { agentModel: agent.otherModel.agentModel }),
      );
      expect(result).toMatchObject({ outcome: "finished", finalText: "From the other model." });
      expect(result.details?.model).toBe(agent.otherModel.agentModel);
      expect(server.requests[0]?.model).toBe(agent.otherModel.wire);
    });

    it("inside the OS sandbox, a script that tries to leave is refused and its own work lands", async () => {
      const result = await sandboxCase({
        scripted,
        make: (server) => make(server),
        workDir,
        runOptions,
        shell: (command) => agent.shell(command),
        write: (cwd, path, content) => agent.write(cwd, path, content),
        cleanups,
      });
      expect(result.outcome).not.toBe("error");
    });

    classifies("plugs into the core manager, which retries a truncated attempt", async () => {
      const cwd = await workDir();
      const cut = { text: "Half of", finishReason: "length" } as const;
      const { tag, server } = scripted([
        ...Array.from({ length: expects.lengthContinues + 1 }, () => ({ ...cut })),
        { toolCalls: [agent.write(cwd, "out.txt", "ok")] },
        { text: "Wrote out.txt." },
      ]);
      const manager = createManager({ cwd: process.cwd(), executor: make(server), maxRetries: 1 });
      const report = await manager.run(`Write out.txt ${tag}`, { cwd });
      expect(report.status).toBe("completed");
      expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 2 });
      expect(await readFile(join(cwd, "out.txt"), "utf8")).toBe("ok");
      // The retry's prompt carried the feedback about the cut-off attempt.
      const retry = server.requests[expects.lengthContinues + 1];
      expect(JSON.stringify(retry?.body)).toContain("Previous attempt");
    });
  });
}
