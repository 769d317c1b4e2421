export { type CliIo, exitCodes, runCli } from "./cli.js";
export { type JsonReport, toJsonReport } from "./json-report.js";
