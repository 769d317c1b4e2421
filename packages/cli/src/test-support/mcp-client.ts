// An MCP client (the official SDK's) over stdio to a spawned `taskledger mcp`, for the CLI's tests
// and bench/mcp-warm.ts, which runs it under plain Node: it imports no other file of the tests.
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  ListRootsRequestSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";

const bin = resolve(import.meta.dirname, "../../dist/bin.js");

export interface McpClientOptions {
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  /** Roots the client lists; none: the client has no roots capability. */
  roots?: string[];
  /** Answers the server's plan reviews; none: the client has no elicitation capability. */
  elicit?: (request: ElicitRequest, signal: AbortSignal) => Promise<ElicitResult>;
}

export interface TestMcpClient {
  client: Client;
  /** Calls a tool; every result is kept in `results`. */
  call(
    name: string,
    args: Record<string, unknown>,
    onprogress?: (p: Progress) => void,
  ): Promise<CallToolResult>;
  /** Calls a tool that must succeed and returns its structured content. */
  ok<T = Record<string, unknown>>(
    name: string,
    args: Record<string, unknown>,
    onprogress?: (p: Progress) => void,
  ): Promise<T>;
  results: CallToolResult[];
  /** The server's log (its stderr) so far. */
  log(): string;
  pid: number;
  /** Closes stdin as a quitting client does, and waits for the server process to end. */
  close(): Promise<void>;
}

export async function connectMcp(options: McpClientOptions): Promise<TestMcpClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, "mcp", ...options.args],
    cwd: options.cwd,
    env: { ...(process.env as Record<string, string>), CI: "true", ...options.env },
    stderr: "pipe",
  });
  let log = "";
  transport.stderr?.on("data", (chunk) => {
    log += chunk;
  });
  const client = new Client(
    { name: "taskledger-test", version: "1.0.0" },
    {
      capabilities: {
        ...(options.roots ? { roots: { listChanged: true } } : {}),
        ...(options.elicit ? { elicitation: { form: {} } } : {}),
      },
    },
  );
  if (options.roots) {
    const roots = options.roots;
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: roots.map((path) => ({ uri: pathToFileURL(path).href, name: path })),
    }));
  }
  if (options.elicit) {
    const elicit = options.elicit;
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      elicit(request, extra.signal),
    );
  }
  await client.connect(transport);
  const results: CallToolResult[] = [];
  const call = async (
    name: string,
    args: Record<string, unknown>,
    onprogress?: (p: Progress) => void,
  ) => {
    const result = (await client.callTool({ name, arguments: args }, undefined, {
      timeout: 120_000,
      ...(onprogress ? { onprogress } : {}),
    })) as CallToolResult;
    results.push(result);
    return result;
  };
  const pid = transport.pid!;
  return {
    client,
    call,
    async ok(name, args, onprogress) {
      const result = await call(name, args, onprogress);
      if (result.isError)
        throw new Error(`${name} failed: ${JSON.stringify(result.content)}\n${log}`);
      return result.structuredContent as never;
    },
    results,
    log: () => log,
    pid,
    async close() {
      await transport.close();
    },
  };
}
