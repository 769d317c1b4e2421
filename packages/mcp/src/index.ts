export {
  createTaskledgerMcpServer,
  type McpTransport,
  type StdioOptions,
  serveStdio,
  type TaskledgerMcpOptions,
  type TaskledgerMcpServer,
} from "./mcp-server.js";
export type { RunHost } from "./runs/run-host.js";
