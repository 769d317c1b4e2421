import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { RunCatalog } from "@taskledger/ui";
import { IdleRelease } from "./runs/idle-release.js";
import { LiveRuns } from "./runs/live-runs.js";
import type { RunHost } from "./runs/run-host.js";
import { ClientRoots } from "./security/client-roots.js";
import { secretsOf } from "./security/redact.js";
import { registerTools } from "./tools/taskledger-tools.js";

export interface TaskledgerMcpOptions {
  host: RunHost;
  /** Where runs work when the client has no roots. */
  startDirectory: string;
  /** The environment the host's keys come from: no result ever shows one of them. */
  env: Readonly<Record<string, string | undefined>>;
  /** A line of the server's log (the CLI writes it to stderr). */
  log: (line: string) => void;
  /** Runs at once (default 2). */
  maxRuns?: number;
  /** Longest `wait_for_run` (default 600 s) and its default (45 s, under common clients' timeouts). */
  maxWaitSeconds?: number;
  defaultWaitSeconds?: number;
  /** How long an elicitation form may stay open (default 30 min). */
  reviewTimeoutSeconds?: number;
  /**
   * How long the host keeps its agent servers (the opencode pool, ~1 GB) after the last run or
   * plan ended, before `host.release()` stops them (default 600 s).
   */
  idleReleaseSeconds?: number;
  version?: string;
}

// The most array elements and object members one call's arguments may hold (an edited plan).
const maxInputElements = 20_000;
// A message longer than this on stdin is refused, not buffered.
const maxMessageBytes = 8 * 1024 * 1024;

/**
 * An MCP server transport: the SDK's `Transport` (stdio, Streamable HTTP, …), typed by its shape
 * so these types compile without the SDK's DOM-only ones (`HeadersInit`).
 */
export interface McpTransport {
  start(): Promise<void>;
  close(): Promise<void>;
  send(message: never, options?: never): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((...args: never[]) => void) | undefined;
}

export interface TaskledgerMcpServer {
  /** Serves the tools on `transport` (the server is not connected until then). */
  connect(transport: McpTransport): Promise<void>;
  runs: LiveRuns;
  /** Stops every run (each stays resumable from the store) and closes the connection. */
  close(): Promise<void>;
}

/** taskledger's tools on an MCP server, not yet connected. */
export function createTaskledgerMcpServer(options: TaskledgerMcpOptions): TaskledgerMcpServer {
  const mcp = new McpServer(
    { name: "taskledger", version: options.version ?? "0.1.0" },
    {
      capabilities: { tools: {} },
      maxToolInputElements: maxInputElements,
      instructions:
        "taskledger finishes long coding requests: it plans them into sub-tasks, runs each in a fresh coding-agent session, checks and retries them. Hand it work too big for one session with start_run, follow it with wait_for_run, answer its plan review with answer_plan_review, and read the result with get_run_report.",
    },
  );
  const runs = new LiveRuns(options.maxRuns ?? 2);
  const release = options.host.release?.bind(options.host) ?? (async () => {});
  const idle = new IdleRelease((options.idleReleaseSeconds ?? 600) * 1000, release, options.log);
  registerTools({
    host: options.host,
    runs,
    roots: new ClientRoots(mcp.server, options.startDirectory),
    catalog: new RunCatalog(options.host.storeDirectory),
    mcp,
    secrets: secretsOf(options.env),
    log: options.log,
    defaultWaitMs: (options.defaultWaitSeconds ?? 45) * 1000,
    maxWaitMs: (options.maxWaitSeconds ?? 600) * 1000,
    reviewTimeoutMs: (options.reviewTimeoutSeconds ?? 1800) * 1000,
    idle,
  });
  return {
    connect: (transport) => mcp.connect(transport as unknown as Transport),
    runs,
    async close() {
      idle.close();
      await runs.stopAll();
      await mcp.close();
    },
  };
}

export interface StdioOptions extends TaskledgerMcpOptions {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  /** Aborted (Ctrl-C, SIGTERM): stop the runs and return. */
  signal: AbortSignal;
}

/**
 * Serves taskledger over stdio until the client closes stdin or `signal` aborts; then stops the
 * runs (their logs keep them resumable), says so in the log, and resolves.
 */
export async function serveStdio(options: StdioOptions): Promise<void> {
  const server = createTaskledgerMcpServer(options);
  const transport = new StdioServerTransport(
    options.stdin as NodeJS.ReadStream,
    options.stdout as NodeJS.WriteStream,
    { maxBufferSize: maxMessageBytes },
  );
  const gone = new Promise<string>((resolve) => {
    options.stdin.once("end", () => resolve("the client closed stdin"));
    options.stdin.once("close", () => resolve("the client closed stdin"));
    transport.onclose = () => resolve("the connection closed");
    if (options.signal.aborted) resolve("interrupted");
    options.signal.addEventListener("abort", () => resolve("interrupted"), { once: true });
  });
  await server.connect(transport);
  options.log(`serving on stdio; runs are logged in ${options.host.storeDirectory}`);
  const why = await gone;
  const running = server.runs.running();
  if (running.length === 0) options.log(`${why}: no run was running; exiting`);
  for (const live of running)
    options.log(
      `${why}: stopping run ${live.runId}; its log keeps it: resume_run "${live.runId}" or \`taskledger resume ${live.runId} --store ${options.host.storeDirectory}\``,
    );
  await server.close();
}
