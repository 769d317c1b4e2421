import { readFileSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type AgentEvent, createManager, ExecutorError } from "@taskledger/core";
import { createModelServer, scriptedOpencodeProvider } from "@taskledger/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { OpencodeServerExecutor } from "./opencode-server-executor.js";
import { listDescendants } from "./process-tree.js";
import { type ExecutorKind, executorHarness } from "./test-support/executor-harness.js";

const { cleanups, scriptedServer, workDir, executorFor, runOptions, cleanup } = executorHarness();
afterAll(cleanup);

const kinds: ExecutorKind[] = ["cli", "server"];

// One suite, both executors: the evaluator must not be able to tell their results apart.
// Concurrent: each test has its own server and directories, and most of the wall time is opencode
// starting up.
describe.concurrent.each(kinds)(
  "the %s executor on the real opencode binary",
  { timeout: 150_000 },
  (kind) => {
    const make = (
      server: Parameters<typeof executorFor>[0],
      options: Parameters<typeof executorFor>[1] = {},
    ) => executorFor(server, options, kind);
    // `opencode run` exits 1 after reporting an error; a server session just ends.
    const errorExit = kind === "cli" ? 1 : 0;
    it("writes a file through the write tool and finishes with text", async () => {
      const server = await scriptedServer([
        {
          toolCalls: [
            { name: "write", arguments: { filePath: "hello.txt", content: "hi there\n" } },
          ],
        },
        { text: "I wrote hello.txt.", usage: { inputTokens: 50, outputTokens: 6 } },
      ]);
      const cwd = await workDir();
      const events: AgentEvent[] = [];
      const result = await make(server).run(
        "Write hello.txt",
        runOptions(cwd, { onEvent: (e) => events.push(e) }),
      );
      expect(result.outcome).toBe("finished");
      expect(await readFile(join(cwd, "hello.txt"), "utf8")).toBe("hi there\n");
      expect(result.finalText).toBe("I wrote hello.txt.");
      expect(result.stepFinishReasons).toEqual(["tool-calls", "stop"]);
      expect(result.filesChanged).toEqual(["hello.txt"]);
      expect(result.toolCalls).toEqual([
        expect.objectContaining({ tool: "write", status: "completed" }),
      ]);
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(result.details).toMatchObject({ exitCode: 0, permissionRejected: false });
      expect(events.map((e) => e.type)).toEqual([
        "step-start",
        "tool-use",
        "step-finish",
        "step-start",
        "text",
        "step-finish",
      ]);
      // --title saved the title call: every request was the agent's own, with its tools.
      expect(server.requests).toHaveLength(2);
      expect(server.extra).toHaveLength(0);
      expect(server.requests.every((r) => JSON.stringify(r.body).includes('"write"'))).toBe(true);
    });

    it("reports a length finish as truncated", async () => {
      const server = await scriptedServer([{ text: "The first half of", finishReason: "length" }]);
      const result = await make(server).run("Explain", runOptions(await workDir()));
      expect(result.outcome).toBe("truncated");
      expect(result.stepFinishReasons.at(-1)).toBe("length");
    });

    it("reports a near-empty stop after tool use as truncated", async () => {
      const server = await scriptedServer([
        { toolCalls: [{ name: "write", arguments: { filePath: "a.txt", content: "a" } }] },
        { text: "", usage: { inputTokens: 10, outputTokens: 2 } },
      ]);
      const result = await make(server).run("Write a.txt", runOptions(await workDir()));
      expect(result.outcome).toBe("truncated");
    });

    it("ends as error on a provider 500 after opencode's own retries", async () => {
      const fail = { status: 500, headers: { "retry-after-ms": "10" } };
      const server = await scriptedServer([fail, fail, fail, fail, fail, fail, fail, fail]);
      const result = await make(server).run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ statusCode: 500, exitCode: errorExit });
      // opencode retried five times itself before giving up.
      expect(server.requests).toHaveLength(6);
    });

    it("ends as error on a provider 429", async () => {
      const limit = { status: 429, headers: { "retry-after-ms": "10" } };
      const server = await scriptedServer(Array.from({ length: 8 }, () => limit));
      const result = await make(server).run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ statusCode: 429, exitCode: errorExit });
      expect(server.requests).toHaveLength(6);
    });

    it("a rejected permission is not finished", async () => {
      const server = await scriptedServer([
        { toolCalls: [{ name: "bash", arguments: { command: "echo hi", description: "say hi" } }] },
        { text: "Done." },
      ]);
      const result = await make(server, { permission: { bash: "ask" } }).run(
        "Run echo",
        runOptions(await workDir()),
      );
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ permissionRejected: true, exitCode: 0 });
      expect(result.error).toContain("rejected permission");
    });

    it("ends a run whose stream never gives a finish reason", async () => {
      const chunk = (delta: unknown) =>
        `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
      const noFinish = {
        rawBody: `${chunk({ role: "assistant", content: "" })}${chunk({ content: "thinking" })}data: [DONE]\n\n`,
        contentType: "text/event-stream",
      };
      const server = await scriptedServer(Array.from({ length: 20 }, () => noFinish));
      const result = await make(server).run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ stoppedBy: "unknown-finish-loop" });
      // The third `unknown` triggers the stop; opencode may finish one more step before the kill lands.
      expect(result.stepFinishReasons.length).toBeGreaterThanOrEqual(3);
      expect(result.stepFinishReasons.length).toBeLessThanOrEqual(5);
      expect(new Set(result.stepFinishReasons)).toEqual(new Set(["unknown"]));
    });

    it("abort ends opencode and the commands it started, leaving no process", async () => {
      const server = await scriptedServer([
        {
          toolCalls: [
            {
              name: "bash",
              arguments: { command: "echo $$ > pid.txt; exec sleep 300", description: "wait" },
            },
          ],
        },
      ]);
      const cwd = await workDir();
      const controller = new AbortController();
      const running = make(server).run("Wait", runOptions(cwd, { abortSignal: controller.signal }));
      const toolPid = await waitForPid(join(cwd, "pid.txt"));
      expect(alive(toolPid)).toBe(true);
      controller.abort();
      const result = await running;
      expect(result.outcome).toBe("cancelled");
      const pid = result.details?.pid as number;
      expect(pid).toBeGreaterThan(0);
      // The CLI's process is gone; a server stays up for the next attempt, with nothing under it.
      if (kind === "cli") expect(alive(pid)).toBe(false);
      else expect(listDescendants(pid).filter((p) => alive(p.pid))).toEqual([]);
      expect(alive(toolPid)).toBe(false);
    });

    it("times out a hung model call and leaves no process", async () => {
      const server = await scriptedServer([{ hang: true }]);
      const result = await make(server, { timeoutMs: 15_000 }).run(
        "Hi",
        runOptions(await workDir()),
      );
      expect(result.outcome).toBe("timeout");
      expect(result.details).toMatchObject({ stoppedBy: "timeout" });
      if (kind === "cli") expect(alive(result.details?.pid as number)).toBe(false);
      // Under load opencode may not have reached the model yet; it never got past the one call.
      expect(server.requests.length).toBeLessThanOrEqual(1);
    });

    it("runs three attempts in parallel in separate directories without interfering", async () => {
      const server = await createModelServer({
        replies: (request) => {
          const body = JSON.stringify(request.body);
          const name = /task-([ABC])/.exec(body)?.[1] ?? "X";
          // A request that already holds the tool's result is the second step.
          if (body.includes("Wrote file successfully")) return { text: `Task ${name} done.` };
          return {
            toolCalls: [{ name: "write", arguments: { filePath: `${name}.txt`, content: name } }],
          };
        },
      });
      cleanups.push(() => server.close());
      const executor = make(server, { keepAttemptDirs: true });
      const names = ["A", "B", "C"];
      const dirs = await Promise.all(names.map(() => workDir()));
      const results = await Promise.all(
        names.map((name, i) => executor.run(`Do task-${name}`, runOptions(dirs[i] as string))),
      );
      for (const [i, name] of names.entries()) {
        const result = results[i];
        expect(result?.outcome).toBe("finished");
        expect(result?.finalText).toBe(`Task ${name} done.`);
        expect(await readdir(dirs[i] as string)).toEqual([`${name}.txt`]);
        const attemptDir = result?.details?.attemptDir as string;
        cleanups.push(() => rm(attemptDir, { recursive: true, force: true }));
        // Hermetic: nothing was installed into the attempt's config directory.
        expect(await readdir(join(attemptDir, "config", "opencode", "node_modules"))).toEqual([]);
      }
      const sessions = new Set(results.map((r) => r.details?.sessionId));
      expect(sessions.size).toBe(3);
      expect(server.requests).toHaveLength(6);
    });

    it("makes no network request but to the model server", async () => {
      const server = await scriptedServer([{ text: "Hello." }]);
      // Every request opencode sends through a proxy is recorded here and refused.
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
      cleanups.push(() => new Promise((resolve) => proxy.close(() => resolve())));
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const env = { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, NO_PROXY: "127.0.0.1,localhost" };
      const result = await make(server, { env }).run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("finished");
      expect(server.requests).toHaveLength(1);
      expect(attempts).toEqual([]);
    });

    it("caps the steps of an agent that never stops calling tools", async () => {
      const echo = {
        toolCalls: [{ name: "bash", arguments: { command: "echo again", description: "echo" } }],
      };
      const server = await scriptedServer(Array.from({ length: 10 }, () => echo));
      const result = await make(server, { maxSteps: 2 }).run("Loop", runOptions(await workDir()));
      // opencode's own `steps` cap lets one more step through; the executor's watchdog ends it.
      expect(result.outcome).toBe("error");
      expect(result.details).toMatchObject({ stoppedBy: "step-limit" });
      expect(result.stepFinishReasons.slice(0, 3)).toEqual([
        "tool-calls",
        "tool-calls",
        "tool-calls",
      ]);
      expect(result.stepFinishReasons.length).toBeLessThanOrEqual(4);
      if (kind === "cli") expect(alive(result.details?.pid as number)).toBe(false);
    });

    it("survives a mid-stream disconnect through opencode's retry", async () => {
      const server = await scriptedServer([
        { text: "This answer is cut off by the network", disconnectAfterChunks: 2 },
        { text: "Complete answer." },
      ]);
      const result = await make(server).run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("finished");
      expect(result.finalText).toBe("Complete answer.");
      expect(server.requests).toHaveLength(2);
    });

    it("a config opencode refuses ends the attempt with opencode's own message, not retryable", async () => {
      const server = await scriptedServer([]);
      const executor = make(server, {
        config: { provider: scriptedOpencodeProvider(server), logLevel: "LOUD" },
      });
      const result = await executor.run("Hi", runOptions(await workDir()));
      expect(result).toMatchObject({ outcome: "error", retryable: false });
      expect(result.error).toBe(
        'opencode rejected its config: Configuration is invalid at OPENCODE_CONFIG_CONTENT ↳ Expected LogLevel, got "LOUD" logLevel',
      );
      expect(server.requests).toHaveLength(0);
    });

    it("a missing binary is a clear error that says how to install opencode", async () => {
      const server = await scriptedServer([]);
      const executor = make(server, { binaryPath: "/nonexistent/opencode" });
      const error = await executor.run("Hi", runOptions(await workDir())).catch((e: unknown) => e);
      expect(ExecutorError.isInstance(error)).toBe(true);
      expect(String((error as Error).message)).toContain("npm install opencode-ai");
    });

    it("an attempt's own agentModel is the model that answers it", async () => {
      const server = await scriptedServer([{ text: "From the other model." }]);
      const executor = make(server, {
        config: {
          provider: scriptedOpencodeProvider(server, { models: ["test-model", "other-model"] }),
        },
      });
      const result = await executor.run(
        "Hi",
        runOptions(await workDir(), { agentModel: "scripted/other-model" }),
      );
      expect(result).toMatchObject({ outcome: "finished", finalText: "From the other model." });
      expect(result.details?.model).toBe("scripted/other-model");
      expect(JSON.stringify(server.requests[0]?.body)).toContain(`"model":"other-model"`);
    });

    it("plugs into the core manager, which retries a truncated attempt", async () => {
      const server = await scriptedServer([
        { text: "Half of", finishReason: "length" },
        { toolCalls: [{ name: "write", arguments: { filePath: "out.txt", content: "ok" } }] },
        { text: "Wrote out.txt." },
      ]);
      const cwd = await workDir();
      const manager = createManager({ cwd: process.cwd(), executor: make(server), maxRetries: 1 });
      const report = await manager.run("Write out.txt", { cwd });
      expect(report.status).toBe("completed");
      expect(report.subTasks[0]).toMatchObject({ status: "completed", attempts: 2 });
      expect(await readFile(join(cwd, "out.txt"), "utf8")).toBe("ok");
      // The retry's prompt carried the feedback about the cut-off attempt.
      expect(JSON.stringify(server.requests[1]?.body)).toContain("Previous attempt");
    });

    it.runIf(kind === "server")(
      "a server killed mid-attempt ends it as a retryable error, and the next attempt runs on a new server",
      async () => {
        const server = await scriptedServer([
          {
            toolCalls: [
              {
                name: "bash",
                arguments: { command: "echo $$ > pid.txt; exec sleep 300", description: "wait" },
              },
            ],
          },
          { text: "Second attempt done." },
        ]);
        const executor = make(server, { poolSize: 1 }) as OpencodeServerExecutor;
        const cwd = await workDir();
        const running = executor.run("Wait", runOptions(cwd));
        const toolPid = await waitForPid(join(cwd, "pid.txt"));
        const serverPid = parentOf(toolPid, 5);
        expect(serverPid).toBeGreaterThan(0);
        process.kill(serverPid as number, "SIGKILL");
        const result = await running;
        expect(result.outcome).toBe("error");
        expect(result.retryable).toBeUndefined();
        expect(result.error).toContain("the opencode server exited mid-attempt");
        expect(alive(toolPid)).toBe(false);
        const next = await executor.run("Again", runOptions(cwd, { attempt: 2 }));
        expect(next).toMatchObject({ outcome: "finished", finalText: "Second attempt done." });
        expect(next.details?.pid).not.toBe(result.details?.pid);
        expect(executor.runningServers).toBe(1);
      },
    );
    it.runIf(kind === "server")(
      "a server that stops answering (SIGSTOP) is killed after serverHangMs: a retryable error, then a new server",
      async () => {
        const server = await scriptedServer([
          {
            toolCalls: [
              {
                name: "bash",
                arguments: { command: "echo $$ > pid.txt; exec sleep 300", description: "wait" },
              },
            ],
          },
          { text: "After the hang." },
        ]);
        // Past opencode's 10 s heartbeat, so only a server that stopped answering trips it.
        const executor = make(server, {
          poolSize: 1,
          serverHangMs: 12_000,
        }) as OpencodeServerExecutor;
        const cwd = await workDir();
        const running = executor.run("Wait", runOptions(cwd));
        const toolPid = await waitForPid(join(cwd, "pid.txt"));
        const serverPid = parentOf(toolPid, 5) as number;
        process.kill(serverPid, "SIGSTOP");
        const result = await running;
        expect(result.outcome).toBe("error");
        expect(result.retryable).toBeUndefined();
        expect(result.error).toContain("the opencode server sent nothing for 12000 ms");
        expect(alive(serverPid)).toBe(false);
        expect(alive(toolPid)).toBe(false);
        const next = await executor.run("Again", runOptions(cwd, { attempt: 2 }));
        expect(next).toMatchObject({ outcome: "finished", finalText: "After the hang." });
      },
    );
  },
);

/** A process that still runs; a zombie (dead, waiting for its parent to reap it) does not count. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (process.platform !== "linux") return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The ancestor of `pid` that is the executor's server (an `opencode serve`), up to `depth` levels. */
function parentOf(pid: number, depth: number): number | undefined {
  let current = pid;
  for (let i = 0; i < depth; i++) {
    const stat = readFileSync(`/proc/${current}/stat`, "utf8");
    current = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (readFileSync(`/proc/${current}/cmdline`, "utf8").includes("serve")) return current;
  }
  return undefined;
}

async function waitForPid(path: string): Promise<number> {
  for (let i = 0; i < 2400; i++) {
    const text = await readFile(path, "utf8").catch(() => "");
    if (/^\d+\s*$/.test(text)) return Number(text.trim());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no pid written to ${path}`);
}
