import { afterAll, describe, expect, it } from "vitest";
import { type ExecutorKind, executorHarness } from "../test-support/executor-harness.js";

const { scriptedServer, workDir, executorFor, runOptions, cleanup } = executorHarness();
afterAll(cleanup);

// Claude Code's and Codex's `baseUrl` are covered by their sign-in tests.
describe.concurrent.each<ExecutorKind>(["cli", "server"])(
  "the %s opencode executor's baseUrl",
  { timeout: 150_000 },
  (kind) => {
    it("sends the model's calls to it, over the provider's baseURL in the host's config", async () => {
      const server = await scriptedServer([{ text: "Hello from the endpoint." }]);
      // The host's config points the provider at a port nobody listens on.
      const nowhere = { openaiBaseURL: "http://127.0.0.1:9/v1" };
      const executor = executorFor(nowhere, { baseUrl: server.openaiBaseURL }, kind);
      const result = await executor.run("Hi", runOptions(await workDir()));
      expect(result).toMatchObject({ outcome: "finished", finalText: "Hello from the endpoint." });
      expect(server.requests).toHaveLength(1);
    });
  },
);
