#!/usr/bin/env node
import { constants } from "node:os";
import { runCli } from "./cli.js";
import { exitCodes } from "./cli-io.js";

// Ctrl-C, `kill` (SIGTERM: timeout, docker stop, CI cancels) or a closed terminal (SIGHUP), once:
// cancel cleanly (running attempts stopped, report printed, exit 128 + the signal's number).
// Any of them a second time: quit at once; the executor kills the agents on the way out.
const controller = new AbortController();
let received: NodeJS.Signals | undefined;
const exitCodeOf = (signal: NodeJS.Signals) => 128 + (constants.signals[signal] ?? 0);

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (received !== undefined) process.exit(exitCodeOf(signal));
    received = signal;
    if (signal === "SIGHUP") {
      // The terminal is gone: writing to it fails, and that must not end the cancel half-way.
      for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
    }
    const again = signal === "SIGINT" ? "Ctrl-C" : `${signal}`;
    process.stderr.write(`\nCancelling (${signal})… (${again} again to quit at once)\n`);
    controller.abort();
  });
}

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
process.exitCode = code === exitCodes.cancelled && received ? exitCodeOf(received) : code;
