// What every executor's agent gets of the host and how it meets a refused key, as one function
// beside `executorSuite`: each executor's test file calls both with the same agent.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { ExecuteOptions } from "@taskledger/core";
import { createModelServer, type ScriptedReply } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subTask } from "./executor-harness.js";
import type { SuiteAgent, SuiteOptions, SuiteServer } from "./suite-agent.js";

/** What an agent says of a 401, and what it may cost before the attempt ends. */
export interface BoundaryExpects {
  /** The provider's message, or the agent's own word for the refusal. */
  refusalMessage: RegExp;
  /** Requests a 401 may cost (Codex retries it itself, quickly). */
  refusedRequests: number;
  /** How its attempt directories' names start (`taskledger-codex-`). */
  dirPrefix: string;
}

/** A provider's answer to a bad key, in the shape OpenAI's and Anthropic's clients read. */
const providerRefusal = {
  type: "error",
  error: { type: "authentication_error", message: "Incorrect API key provided: sk-bad" },
};

// Secrets of the host's that no agent may see unless passed by name.
const hostSecrets = {
  AWS_SECRET_ACCESS_KEY: "host-aws-secret",
  GITHUB_TOKEN: "host-github-token",
  MY_SECRET: "host-my-secret",
  UNRELATED_SETTING: "host-unrelated",
};

/** Registers the environment and refused-key cases under `describe(name)`. */
export function agentBoundarySuite(name: string, agent: SuiteAgent, expects: BoundaryExpects) {
  describe.concurrent(`${name}: what it gets of the host`, { timeout: 150_000 }, () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    beforeAll(() => {
      Object.assign(process.env, hostSecrets);
    });
    afterAll(async () => {
      for (const key of Object.keys(hostSecrets)) delete process.env[key];
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });
    const serve = async (replies: ScriptedReply[]): Promise<SuiteServer> => {
      const server = await createModelServer({ replies });
      cleanups.push(() => server.close());
      return { ...server, url: server.url, requests: server.requests, extra: [] };
    };
    const workDir = async () => {
      const dir = await mkdtemp(join(tmpdir(), "agent-boundary-"));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    };
    // Each case's executor serves its one attempt and is closed when it ends (its servers idle).
    const run = async (server: SuiteServer, cwd: string, options: SuiteOptions = {}) => {
      const executor = agent.make(server, { timeoutMs: 60_000, ...options });
      const attempt: ExecuteOptions = {
        subTask,
        attempt: 1,
        cwd,
        abortSignal: new AbortController().signal,
      };
      try {
        return await executor.run("Do it", attempt);
      } finally {
        await executor.close?.();
      }
    };

    // One attempt given MY_SECRET by name, its attempt directory kept: both cases below read it.
    let passed: Promise<{ env: string; attemptDir: string }> | undefined;
    const passedRun = () => {
      passed ??= (async () => {
        const cwd = await workDir();
        const server = await serve([
          { toolCalls: [agent.shell("env > env.txt")] },
          { text: "I wrote the environment into env.txt." },
        ]);
        const result = await run(server, cwd, { passEnv: ["MY_SECRET"], keepAttemptDirs: true });
        const attemptDir = result.details?.attemptDir as string;
        if (attemptDir) cleanups.push(() => rm(attemptDir, { recursive: true, force: true }));
        expect(result.outcome).toBe("finished");
        return { env: await readFile(join(cwd, "env.txt"), "utf8"), attemptDir };
      })();
      return passed;
    };

    it("the agent's environment is its list: a host secret only when passed by name", async () => {
      const plainRun = async () => {
        const cwd = await workDir();
        const server = await serve([
          { toolCalls: [agent.shell("env > env.txt")] },
          { text: "I wrote the environment into env.txt." },
        ]);
        const result = await run(server, cwd);
        expect(result.outcome).toBe("finished");
        return readFile(join(cwd, "env.txt"), "utf8");
      };
      const [plain, { env: passed }] = await Promise.all([plainRun(), passedRun()]);
      expect(plain).toMatch(/^PATH=/m);
      // Its own home, not the host's.
      expect(plain).toMatch(/^HOME=.*taskledger-/m);
      for (const value of Object.values(hostSecrets)) expect(plain).not.toContain(value);
      expect(passed).toContain("MY_SECRET=host-my-secret");
      for (const key of ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "UNRELATED_SETTING"] as const) {
        expect(passed).not.toContain(hostSecrets[key]);
      }
    });

    it("writes no secret of its environment in its attempt directory, named after the agent", async () => {
      // The agent had the secret (the case above asserts it) and wrote it in its own cwd only.
      const { env, attemptDir: dir } = await passedRun();
      expect(env).toContain("MY_SECRET=host-my-secret");
      expect(basename(dir).startsWith(`${expects.dirPrefix}kept-`)).toBe(true);
      const files = await filesUnder(dir);
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        const text = await readFile(file).catch(() => Buffer.alloc(0));
        expect(text.includes(hostSecrets.MY_SECRET), file).toBe(false);
      }
    });

    it("a 401 from its provider ends the attempt at once, not retryable, naming the refusal", async () => {
      const refused = { status: 401, body: providerRefusal };
      const server = await serve(Array.from({ length: 12 }, () => ({ ...refused })));
      const result = await run(server, await workDir());
      expect(result).toMatchObject({ outcome: "error", retryable: false });
      expect(result.error).toMatch(/model provider refused its credentials \(status 401\)/);
      expect(result.error).toMatch(expects.refusalMessage);
      expect(server.requests.length).toBeGreaterThan(0);
      expect(server.requests.length).toBeLessThanOrEqual(expects.refusedRequests);
    });
  });
}

/** Every regular file under `dir`, however deep. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((e) => join(e.parentPath, e.name));
}
