import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RunCatalog } from "@taskledger/ui";
import type { IdleRelease } from "../runs/idle-release.js";
import type { LiveRuns } from "../runs/live-runs.js";
import type { RunHost } from "../runs/run-host.js";
import type { ClientRoots } from "../security/client-roots.js";

/** What the tools share. */
export interface ToolContext {
  host: RunHost;
  runs: LiveRuns;
  roots: ClientRoots;
  catalog: RunCatalog;
  mcp: McpServer;
  /** Values no result may show. */
  secrets: readonly string[];
  log: (line: string) => void;
  defaultWaitMs: number;
  maxWaitMs: number;
  /** How long an elicitation form may stay open before the answer tool alone is left. */
  reviewTimeoutMs: number;
  /** Held while a run or a plan goes on; the host's idle agent servers are stopped after. */
  idle: IdleRelease;
}
