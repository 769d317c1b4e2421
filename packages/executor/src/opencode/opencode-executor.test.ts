import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { alive, scriptedOpencodeProvider } from "@taskledger/testing";
import { afterAll, describe, expect, it } from "vitest";
import { agentBoundarySuite } from "../test-support/agent-boundary-suite.js";
import { type ExecutorKind, executorHarness } from "../test-support/executor-harness.js";
import { executorSuite } from "../test-support/executor-suite.js";
import type { SuiteAgent } from "../test-support/suite-agent.js";
import type { OpencodeServerExecutor } from "./server/opencode-server-executor.js";

const { scriptedServer, workDir, executorFor, runOptions, cleanup } = executorHarness();
afterAll(cleanup);

const kinds: ExecutorKind[] = ["cli", "server"];

const chunk = (delta: unknown) =>
  `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;

// The shared suite, on both ways of running opencode: the evaluator cannot tell them apart.
for (const kind of kinds) {
  const agent: SuiteAgent = {
    reusable: kind === "server",
    // The same events and outcome rules for both: the answer-only cases run on the server.
    ...(kind === "cli" ? { answersReadAs: "the server executor" } : {}),
    make: (server, options) => {
      // Both models always: the per-attempt model case then runs on the executor most cases share.
      const provider = scriptedOpencodeProvider(server, { models: ["test-model", "other-model"] });
      const { badConfig, askForCommands, ...rest } = options;
      return executorFor(
        server,
        {
          // Three servers serve the cases that share an executor (three run at once).
          ...(kind === "server" ? { poolSize: 3 } : {}),
          ...rest,
          config: badConfig ? { provider, logLevel: "LOUD" } : { provider },
          ...(askForCommands ? { permission: { bash: "ask" } } : {}),
        },
        kind,
      );
    },
    otherModel: { agentModel: "scripted/other-model", wire: "other-model" },
    write: (_cwd, path, content) => ({ name: "write", arguments: { filePath: path, content } }),
    shell: (command) => ({ name: "bash", arguments: { command, description: "run" } }),
    noFinishStream: {
      rawBody: `${chunk({ role: "assistant", content: "" })}${chunk({ content: "thinking" })}data: [DONE]\n\n`,
      contentType: "text/event-stream",
    },
    expects: {
      lengthContinues: 0,
      // opencode retries five times itself before giving up.
      providerErrorRequests: 6,
      // `opencode run` exits 1 after reporting an error; a server session just ends.
      providerErrorExit: kind === "cli" ? 1 : 0,
      statusCodeOf: (status) => status,
      // opencode's session error carries the provider's response headers.
      retryAfter: true,
      limitProvider: "scripted",
      writeListsFile: true,
      perStepUsage: true,
      leaderExits: kind === "cli",
      installHint: "npm install opencode-ai",
      badConfigError:
        /^opencode rejected its config: Configuration is invalid at OPENCODE_CONFIG_CONTENT ↳ Expected LogLevel, got "LOUD" logLevel$/,
      readOnlyRefusal: /unavailable tool 'write'/,
      commandRefused(result) {
        expect(result.outcome).toBe("error");
        expect(result.details).toMatchObject({ permissionRejected: true, exitCode: 0 });
        expect(result.error).toContain("rejected permission");
      },
      noFinishStop: "unknown-finish-loop",
      hangTimeoutMs: 15_000,
    },
  };
  executorSuite(`the ${kind} executor on the real opencode binary`, agent);
  agentBoundarySuite(`the ${kind} executor on the real opencode binary`, agent, {
    refusalMessage: /Incorrect API key provided: sk-bad/,
    dirPrefix: "taskledger-opencode-",
    refusedRequests: 1,
  });
}

// What only opencode does: its retry of a dropped stream, and the server executor's own faults.
describe.concurrent.each(kinds)(
  "the %s executor on the real opencode binary",
  { timeout: 150_000 },
  (kind) => {
    const make = (
      server: Parameters<typeof executorFor>[0],
      options: Parameters<typeof executorFor>[1] = {},
    ) => executorFor(server, options, kind);
    // opencode's own retry, the same code under `opencode run` and its server: run on the server.
    it.runIf(kind === "server")(
      "survives a mid-stream disconnect through opencode's retry",
      async () => {
        const server = await scriptedServer([
          { text: "This answer is cut off by the network", disconnectAfterChunks: 2 },
          { text: "Complete answer." },
        ]);
        const executor = make(server) as OpencodeServerExecutor;
        const result = await executor.run("Hi", runOptions(await workDir()));
        await executor.close();
        expect(result.outcome).toBe("finished");
        expect(result.finalText).toBe("Complete answer.");
        expect(server.requests).toHaveLength(2);
      },
    );

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
        // Its server would idle to the file's end, costing CPU: stopped now.
        await executor.close();
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
        await executor.close();
      },
    );
  },
);

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
