export { AttemptWatchdog, type WatchdogMessage } from "./attempt-watchdog.js";
export { bindToHost, type HostBinding } from "./bind-to-host.js";
export { isProcessAlive } from "./process-alive.js";
export { createProcessDir, sweepDeadProcessDirs } from "./process-dirs.js";
export { type GroupSpawnOptions, spawnGroup } from "./process-group.js";
export { ProcessGuard, type ProcessGuardOptions } from "./process-guard.js";
export {
  commandLineOf,
  currentProcess,
  isHolderAlive,
  type ProcessIdentity,
  processStartTime,
} from "./process-identity.js";
export {
  attemptAlive,
  attemptMarker,
  groupAlive,
  isRunning,
  listDescendants,
  processesWithEnv,
  processesWithEnvWhere,
  reclaimProcesses,
  signalAttempt,
  signalGroup,
  signalTracked,
  startTimeOf,
  type TrackedProcess,
  waitForExit,
} from "./process-tree.js";
