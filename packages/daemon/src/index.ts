export {
  type ConnectOptions,
  connectDaemon,
  type DaemonAddress,
  DaemonConnection,
  daemonStatus,
  daemonStopTimeoutMs,
  type StoppedDaemon,
  stopDaemon,
} from "./client.js";
export { DaemonExecutor, type DaemonLink } from "./daemon-executor.js";
export {
  type DaemonAttempt,
  type DaemonBuild,
  type DaemonExecutorSpec,
  type DaemonReply,
  type DaemonRequest,
  type DaemonSandboxSpec,
  type DaemonStatus,
  daemonSocketPath,
} from "./protocol.js";
export { DaemonService, type DaemonServiceOptions, defaultDaemonIdleMs } from "./service.js";
