import { existsSync } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  commandLineOf,
  createModelServer,
  pollUntil,
  type RecordedRequest,
} from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { createDemoReplies, demoRequest } from "./demo/demo-scenario.js";
import type { JsonReport } from "./output/json-report.js";
import {
  builtCli,
  codexArgs,
  codexEnv,
  killProcessesUnder,
  processesUnder,
  runDirectories,
  runLogOf,
  spawnCli,
} from "./test-support/cli-harness.js";
import { writeCall } from "./test-support/scripted-replies.js";

/** How long the agent's first model call takes: the time a leaked agent has to write `late.txt`. */
const agentReplyDelayMs = 1500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const isAgentCall = (request: RecordedRequest) =>
  (request.body as { response_format?: unknown }).response_format === undefined;

/**
 * Runs the demo's request through the built CLI on the real Codex (a process per attempt; the
 * agent is not the subject, its processes are); when the agent's first model call arrives (its
 * answer, a write of `late.txt`, is held back), sends `signals` to the CLI.
 */
async function signalMidAttempt(signals: NodeJS.Signals[], json: boolean) {
  const { root, cwd, store } = await runDirectories("taskledger-signals-");
  const demo = createDemoReplies("codex");
  const agentCalls: number[] = [];
  let agentCalled: () => void = () => {};
  const agentCall = new Promise<void>((r) => {
    agentCalled = r;
  });
  const server = await createModelServer({
    replies: (request) => {
      if (!isAgentCall(request)) return demo(request);
      agentCalls.push(Date.now());
      agentCalled();
      return { delayMs: agentReplyDelayMs, ...writeCall("late.txt", "late\n", "codex") };
    },
  });
  const args = ["run", demoRequest, "--yes"];
  args.push(...codexArgs(server.openaiBaseURL, "demo-agent", "demo-manager"));
  args.push("--store", store, "--cwd", cwd, ...(json ? ["--json"] : []));
  // Started in `root`, so everything it starts (agents, the watchdog) is found under it.
  const { child, exit, stdout, stderr } = spawnCli(args, codexEnv, root);
  try {
    await agentCall;
    const agents = (await processesUnder(root)).filter((pid) =>
      commandLineOf(pid).includes("codex"),
    );
    for (const [i, signal] of signals.entries()) {
      // A second signal goes once the first is being handled, as a second Ctrl-C would.
      if (i > 0)
        await pollUntil(
          async () => stderr(),
          (text) => text.includes("Cancelling"),
        );
      child.kill(signal);
    }
    const { code, signal } = await exit;
    const exitedAt = Date.now();
    // Processes SIGKILLed just before the exit may take a moment to go: polled, bounded.
    const leftLater = (
      await pollUntil(
        () => processesUnder(root),
        (pids) => pids.length === 0,
      )
    ).map((pid) => `${pid} ${commandLineOf(pid)}`);
    // Give a leaked agent the time to get its answer and write; then nothing may have been written.
    const answerDue = (agentCalls[0] ?? exitedAt) + agentReplyDelayMs + 1000;
    await sleep(Math.max(0, answerDue - Date.now()));
    const written = [];
    for (const name of await readdir(cwd)) {
      if ((await stat(join(cwd, name))).mtimeMs > exitedAt) written.push(name);
    }
    const log = await runLogOf(store);
    return {
      code,
      signal,
      stdout: stdout(),
      stderr: stderr(),
      agents,
      leftLater,
      written,
      lateFile: existsSync(join(cwd, "late.txt")),
      agentCallsAfterExit: agentCalls.filter((at) => at > exitedAt).length,
      log,
    };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await killProcessesUnder(root);
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
}

describe.runIf(process.platform === "linux")("SIGTERM and SIGHUP cancel like Ctrl-C", () => {
  it.concurrent.each([
    ["SIGTERM", 143, true],
    ["SIGHUP", 129, true],
    ["SIGTERM", 143, false],
    ["SIGHUP", 129, false],
  ] as const)(
    "%s mid-attempt: exit %i, the report printed (--json: %s), no agent left, nothing written after",
    async (signal, code, json) => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const ended = await signalMidAttempt([signal], json);
      expect(ended.signal, ended.stderr).toBeNull();
      expect(ended.code, ended.stderr).toBe(code);
      if (json) {
        const report = JSON.parse(ended.stdout) as JsonReport;
        expect(report.status).toBe("cancelled");
        expect(report.subTasks[0]?.status).toBe("cancelled");
      } else {
        expect(ended.stdout).toMatch(/library.*cancelled/);
      }
      // The cancel is in the run's log.
      expect(ended.log.map((r) => r.type)).toContain("sub-task-cancelled");
      expect(ended.log.at(-1)?.type).toBe("run-finished");
      expect(ended.agents.length).toBeGreaterThan(0);
      expect(ended.leftLater).toEqual([]);
      expect(ended.lateFile).toBe(false);
      expect(ended.written).toEqual([]);
      expect(ended.agentCallsAfterExit).toBe(0);
    },
    120_000,
  );

  it.concurrent.each([
    ["SIGTERM", "SIGTERM", 143],
    ["SIGTERM", "SIGINT", 130],
    ["SIGHUP", "SIGTERM", 143],
  ] as const)(
    "%s then %s quits at once (exit %i), killing the agents first",
    async (first, second, code) => {
      expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
      const ended = await signalMidAttempt([first, second], true);
      if (ended.signal === second) {
        // On a loaded machine the first cancel can finish before the second signal lands, while
        // Node is already exiting and no longer runs handlers: allowed only once all is recorded.
        expect(ended.log.at(-1)?.type, ended.stderr).toBe("run-finished");
      } else {
        expect([ended.code, ended.signal], ended.stderr).toEqual([code, null]);
      }
      expect(ended.agents.length).toBeGreaterThan(0);
      // SIGKILLed on the way out: gone once the kernel has delivered it.
      expect(ended.leftLater).toEqual([]);
      expect(ended.lateFile).toBe(false);
      expect(ended.written).toEqual([]);
      expect(ended.agentCallsAfterExit).toBe(0);
    },
    120_000,
  );
});
