import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createModelServer, type ModelServer } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subTask } from "../test-support/executor-harness.js";
import { createCodexExecutor } from "./codex-executor.js";

const cleanups: (() => Promise<unknown>)[] = [];
const saved = {
  OPENAI_API_KEY: process.env.OPENAI_API_KEY,
  CODEX_API_KEY: process.env.CODEX_API_KEY,
};
beforeAll(() => {
  // The user's key as users have it: OPENAI_API_KEY alone, on the host.
  process.env.OPENAI_API_KEY = "sk-host-openai";
  delete process.env.CODEX_API_KEY;
});
afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(replies: Parameters<typeof createModelServer>[0]): Promise<ModelServer> {
  const server = await createModelServer(replies);
  cleanups.push(() => server.close());
  return server;
}

async function workDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "codex-sign-in-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const attempt = (cwd: string) => ({
  subTask,
  attempt: 1,
  cwd,
  abortSignal: new AbortController().signal,
});

// The real `codex` binary from npm against the scripted Responses face, pointed there by `baseUrl`.
describe.concurrent("Codex signing in and its shell", { timeout: 120_000 }, () => {
  it("sends the host's OPENAI_API_KEY as its bearer key, to the endpoint baseUrl names", async () => {
    const server = await serve({ replies: [{ text: "Hello from the endpoint." }] });
    const executor = createCodexExecutor({ model: "test-model", baseUrl: server.openaiBaseURL });
    const result = await executor.run("Hi", attempt(await workDir()));
    expect(result).toMatchObject({ outcome: "finished", finalText: "Hello from the endpoint." });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-host-openai");
  });

  it("keeps no snapshot of its shell's environment, not even while a command runs", async () => {
    process.env.PLAIN_SETTING = "host-plain-setting";
    cleanups.push(async () => delete process.env.PLAIN_SETTING);
    const look =
      'ls -A "$CODEX_HOME/shell_snapshots" > snaps.txt 2>&1; cat "$CODEX_HOME"/shell_snapshots/* >> snaps.txt 2>&1';
    const server = await serve({
      replies: [
        { toolCalls: [{ name: "exec_command", arguments: { cmd: look } }] },
        { text: "I listed the shell snapshots into snaps.txt." },
      ],
    });
    const cwd = await workDir();
    const executor = createCodexExecutor({
      model: "test-model",
      baseUrl: server.openaiBaseURL,
      passEnv: ["PLAIN_SETTING"],
    });
    const result = await executor.run("Look", attempt(cwd));
    expect(result.outcome).toBe("finished");
    const seen = await readFile(join(cwd, "snaps.txt"), "utf8");
    // Codex 0.169 with snapshots on: a `.sh` file there holding every exported value, the key too.
    expect(seen).toMatch(/No such file or directory/);
    for (const value of ["host-plain-setting", "sk-host-openai"]) expect(seen).not.toContain(value);
  });
});
