import { InvalidConfigError } from "@taskledger/core";
import { scriptedOpencodeProvider } from "@taskledger/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createOpencodeExecutor } from "../index.js";
import { executorHarness, subTask } from "../test-support/executor-harness.js";

const harness = executorHarness();
afterAll(async () => {
  for (const cleanup of harness.cleanups.splice(0)) await cleanup();
});

describe("an agent model opencode does not know (real opencode)", () => {
  it("is refused by preflight, naming it; the attempt given it ends not retryable, naming it", async () => {
    const server = await harness.scriptedServer([]);
    const executor = createOpencodeExecutor({
      model: "scripted/test-model",
      config: { provider: scriptedOpencodeProvider(server) },
    });
    const signal = new AbortController().signal;
    // A model the config lists: known without asking opencode.
    await executor.preflight({ agentModels: ["scripted/test-model"], abortSignal: signal });
    const refused = await executor
      .preflight({ agentModels: ["nosuchprovider/nosuchmodel"], abortSignal: signal })
      .catch((error: unknown) => error);
    expect(InvalidConfigError.isInstance(refused)).toBe(true);
    expect((refused as Error).message).toContain(
      'agent model "nosuchprovider/nosuchmodel" is not one opencode knows',
    );

    const result = await executor.run("Say done", {
      subTask,
      attempt: 1,
      cwd: await harness.workDir(),
      agentModel: "scripted/nosuchmodel",
      abortSignal: signal,
    });
    expect(result.outcome).toBe("error");
    expect(result.retryable).toBe(false);
    expect(result.error).toContain('agent model "scripted/nosuchmodel" is not one opencode knows');
    expect(server.requests).toHaveLength(0);
  }, 60_000);
});
