// `taskledger/cli`: the command line as a function, for hosts that embed it (tests, wrappers).
export { runCli } from "./cli.js";
export { type CliIo, exitCodes } from "./cli-io.js";
