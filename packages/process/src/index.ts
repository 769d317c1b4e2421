export { AttemptWatchdog, type WatchdogMessage } from "./attempt-watchdog.js";
export {
  bindToHost,
  commandLineOf,
  createProcessDir,
  currentProcess,
  type HostBinding,
  isHolderAlive,
  isProcessAlive,
  type ProcessIdentity,
  processStartTime,
  sweepDeadProcessDirs,
} from "./lifetime.js";
export { type GroupSpawnOptions, spawnGroup } from "./process-group.js";
export { ProcessGuard, type ProcessGuardOptions } from "./process-guard.js";
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
