import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelServer } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodexExecutor } from "../codex/codex-executor.js";
import { executorHarness } from "../test-support/executor-harness.js";

const systemTmp = tmpdir();
const savedTmpdir = process.env.TMPDIR;
// Work directories stay outside the temp directory under test.
const { cleanups, scriptedServer, workDir, executorFor, runOptions, cleanup } = executorHarness(
  () => systemTmp,
);
// This file runs in its own process: a private system temp directory keeps other tests' files
// out of the counts.
let privateTmp = "";
beforeAll(async () => {
  privateTmp = await mkdtemp(join(systemTmp, "executor-tmpdir-test-"));
  cleanups.push(() => rm(privateTmp, { recursive: true, force: true }));
  process.env.TMPDIR = privateTmp;
});
afterAll(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  await cleanup();
});

/**
 * The temp directory's handling is the CLI executor's, the same for every agent. opencode unpacks a
 * library into its TMPDIR at every start, so it finishes and is cancelled here; the timeout and the
 * sweep run on Codex too (one native binary, a twentieth of an opencode start's CPU).
 */
function codexFor(server: Pick<ModelServer, "openaiBaseURL">, timeoutMs = 120_000) {
  return createCodexExecutor({
    model: "test-model",
    timeoutMs,
    provider: { baseUrl: server.openaiBaseURL, envKey: "SCRIPTED_KEY", requestMaxRetries: 0 },
    env: { SCRIPTED_KEY: "test-key" },
  });
}

async function tmpEntries(): Promise<string[]> {
  expect(tmpdir()).toBe(privateTmp);
  return (await readdir(privateTmp)).sort();
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A process started and ended: its pid names no running process. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid as number;
}

describe("each attempt's temp directory", { timeout: 150_000 }, () => {
  it.each(["opencode", "codex"])(
    "a finished attempt leaves the system temp directory as it found it (%s)",
    async (agent) => {
      const server = await scriptedServer([{ text: "Hello." }]);
      const before = await tmpEntries();
      const executor = agent === "codex" ? codexFor(server) : executorFor(server);
      const result = await executor.run("Hi", runOptions(await workDir()));
      expect(result.outcome).toBe("finished");
      expect(await tmpEntries()).toEqual(before);
    },
  );

  it("a cancelled attempt leaves the system temp directory as it found it", async () => {
    const server = await scriptedServer([{ hang: true }]);
    const before = await tmpEntries();
    const controller = new AbortController();
    const running = executorFor(server).run(
      "Hi",
      runOptions(await workDir(), { abortSignal: controller.signal }),
    );
    // Started for certain: opencode is waiting on the model.
    await until(() => server.requests.length > 0, "the model call");
    controller.abort();
    const result = await running;
    expect(result.outcome).toBe("cancelled");
    expect(await tmpEntries()).toEqual(before);
  });

  it("a timed-out attempt leaves the system temp directory as it found it", async () => {
    const server = await scriptedServer([{ hang: true }]);
    const before = await tmpEntries();
    const result = await codexFor(server, 15_000).run("Hi", runOptions(await workDir()));
    expect(result.outcome).toBe("timeout");
    expect(await tmpEntries()).toEqual(before);
  });

  it("the first attempt removes what dead processes left and keeps what live ones use", async () => {
    const live = spawn(process.execPath, ["-e", "setTimeout(() => {}, 600000)"], {
      stdio: "ignore",
    });
    cleanups.push(async () => {
      live.kill("SIGKILL");
    });
    const dead = await deadPid();
    // Every agent's directories: Claude Code's and Codex's are named after them.
    const stale = ["opencode", "claude-code", "codex"].map(
      (agent) => `taskledger-${agent}-${dead}-x`,
    );
    const inUse = ["opencode", "claude-code", "codex"].map((a) => `taskledger-${a}-${live.pid}-x`);
    for (const name of [...stale, ...inUse]) {
      await mkdir(join(privateTmp, name, "tmp"), { recursive: true });
    }
    const server = await scriptedServer([{ text: "Hello." }]);
    const result = await codexFor(server).run("Hi", runOptions(await workDir()));
    expect(result.outcome).toBe("finished");
    const entries = await tmpEntries();
    for (const name of stale) expect(entries).not.toContain(name);
    for (const name of inUse) expect(entries).toContain(name);
  });
});
