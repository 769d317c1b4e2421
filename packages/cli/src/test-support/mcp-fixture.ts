// What the tests of `taskledger mcp` share: a directory, a scripted model server and the clients
// connected to the built CLI, and the one-file sub-tasks they plan. Not part of the package.
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { AgentName } from "@taskledger/executor";
import {
  createModelServer,
  killProcessesUnder,
  type ModelServer,
  type ModelServerOptions,
  type RecordedRequest,
  type ScriptedCompletion,
} from "@taskledger/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { builtCli, runDirectories, runOn } from "./cli-harness.js";
import { connectMcp, type McpClientOptions, type TestMcpClient } from "./mcp-client.js";
import { bashCall } from "./scripted-replies.js";

/** Set before the file's tests run: see `mcpFixture`. */
export interface McpFixture {
  /** Everything the file makes is under it. */
  root: string;
  /** `<root>/work`: where the servers run. */
  work: string;
  /** `<root>/store`: the servers' run store. */
  store: string;
  server: ModelServer;
  /** The options of a `taskledger mcp` on the scripted server (its agent's) and the store. */
  args: string[];
  /** Connects a client (with Codex's key on Codex), closed after the file's tests. */
  connect(options: McpClientOptions): Promise<TestMcpClient>;
  /** Every client connected so far. */
  clients: TestMcpClient[];
}

/**
 * Before the file's tests: the built CLI must be there, a root directory (named `prefix`…) with
 * `work` in it, and a model server answering `replies`, the runs' agent `agent` (opencode or
 * Codex) on it. After them: every client connected through the fixture is closed, the server too,
 * what still runs under the root is killed, the root goes.
 */
export function mcpFixture(
  prefix: string,
  replies: ModelServerOptions["replies"],
  agent: "opencode" | "codex" = "opencode",
): McpFixture {
  const clients: TestMcpClient[] = [];
  const fixture = {
    clients,
    async connect(options: McpClientOptions) {
      const env = agent === "codex" ? { ...runOn(agent).env, ...options.env } : options.env;
      const client = await connectMcp({ ...options, ...(env ? { env } : {}) });
      clients.push(client);
      return client;
    },
  } as McpFixture;
  beforeAll(async () => {
    expect(existsSync(builtCli), "run `npm run build` first").toBe(true);
    const { root, cwd, store } = await runDirectories(prefix);
    Object.assign(fixture, { root, work: cwd, store });
    fixture.server = await createModelServer({ replies });
    fixture.args = [...runOn(agent).args(fixture.server.openaiBaseURL), "--store", fixture.store];
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await fixture.server?.close();
    await killProcessesUnder(fixture.root);
    await rm(fixture.root, { recursive: true, force: true });
  });
  return fixture;
}

/** The file a request asks for, `Create <name>.txt …`: the name of the sub-task planned for it. */
export function fileAskedFor(request: RecordedRequest): string {
  return /Create (\w+)\.txt/.exec(JSON.stringify(request.body))?.[1] ?? "unknown";
}

/** One sub-task: write `<name>.txt`, checked by its existence. */
export function fileSubTask(name: string, description: string) {
  return {
    id: name,
    title: `Write ${name}.txt`,
    description,
    successCriteria: [`${name}.txt exists`],
    dependsOn: [],
    checks: [{ type: "file-exists" as const, path: `${name}.txt` }],
  };
}

/** An agent's one call, with its own tool: wait until `<root>/go-<id>` exists, write `<id>.txt`. */
export function waitForGo(
  root: string,
  id: string,
  agent: AgentName = "opencode",
): ScriptedCompletion {
  const go = join(root, `go-${id}`);
  return bashCall(
    `while [ ! -f ${go} ]; do sleep 0.1; done; echo done > ${id}.txt`,
    "wait then write",
    agent,
  );
}
