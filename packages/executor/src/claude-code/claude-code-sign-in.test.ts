import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createModelServer } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subTask } from "../test-support/executor-harness.js";
import { createClaudeCodeExecutor } from "./claude-code-executor.js";

const cleanups: (() => Promise<unknown>)[] = [];
const names = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"] as const;
const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
beforeAll(() => {
  // A subscriber's login as `claude setup-token` gives it: the OAuth token alone, on the host.
  for (const name of names) delete process.env[name];
  process.env.CLAUDE_CODE_OAUTH_TOKEN = "sk-ant-oat01-subscriber";
});
afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// The real `claude` binary from npm against the scripted Anthropic face, pointed there by `baseUrl`.
describe("Claude Code on the user's own login", { timeout: 120_000 }, () => {
  it("signs in with the host's CLAUDE_CODE_OAUTH_TOKEN (auth: login) at the endpoint baseUrl names", async () => {
    const server = await createModelServer({ replies: [{ text: "Hello from the endpoint." }] });
    cleanups.push(() => server.close());
    const cwd = await mkdtemp(join(tmpdir(), "claude-sign-in-"));
    cleanups.push(() => rm(cwd, { recursive: true, force: true }));
    const executor = createClaudeCodeExecutor({
      model: "test-model",
      auth: "login",
      baseUrl: server.anthropicBaseURL,
    });
    const result = await executor.run("Hi", {
      subTask,
      attempt: 1,
      cwd,
      abortSignal: new AbortController().signal,
    });
    expect(result).toMatchObject({ outcome: "finished", finalText: "Hello from the endpoint." });
    expect(server.requests).toHaveLength(1);
    const headers = server.requests[0]?.headers ?? {};
    // Claude Code sends an OAuth token as a bearer token, with its OAuth beta, and no API key.
    expect(headers.authorization).toBe("Bearer sk-ant-oat01-subscriber");
    expect(String(headers["anthropic-beta"])).toContain("oauth-");
    expect(headers["x-api-key"]).toBeUndefined();
  });
});
