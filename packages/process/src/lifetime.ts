// What core re-exports, as its own entry point (`@taskledger/process/lifetime`): whether a
// process lives and who it is, its directories, and binding it to the host's life. Its types need
// no Node type definitions, so a host type-checking core without `@types/node` still can.
export { bindToHost, type HostBinding } from "./bind-to-host.js";
export { isProcessAlive } from "./process-alive.js";
export { createProcessDir, sweepDeadProcessDirs } from "./process-dirs.js";
export {
  commandLineOf,
  currentProcess,
  isHolderAlive,
  type ProcessIdentity,
  processStartTime,
} from "./process-identity.js";
