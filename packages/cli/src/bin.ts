#!/usr/bin/env node
import { runCli } from "./cli.js";

// Ctrl-C once: cancel cleanly (running attempts stopped, report printed, exit 130). Twice: now.
const controller = new AbortController();
process.on("SIGINT", () => {
  if (controller.signal.aborted) process.exit(130);
  process.stderr.write("\nCancelling… (Ctrl-C again to quit at once)\n");
  controller.abort();
});

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
