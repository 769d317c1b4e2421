import {
  InvalidConfigError,
  InvalidRequestError,
  SandboxUnavailableError,
  TaskLedgerError,
  WorkspaceError,
} from "@taskledger/core";
import { Command, CommanderError } from "commander";
import { type CliIo, exitCodes } from "./cli-io.js";
import { addCleanCommand } from "./commands/clean-command.js";
import { addDaemonCommand } from "./commands/daemon-command.js";
import { addDemoCommand } from "./commands/demo-command.js";
import { addMcpCommand } from "./commands/mcp-command.js";
import { addPlanCommand } from "./commands/plan-command.js";
import { addResumeCommand } from "./commands/resume-command.js";
import { addRunCommand } from "./commands/run-command.js";
import { addUiCommand } from "./commands/ui-command.js";
import { addWorkerCommand } from "./commands/worker-command.js";
import { UsageError } from "./options/cli-options.js";
import { withRunOptions } from "./options/run-flags.js";
import { colorsFor } from "./output/terminal-session.js";
import { terminalText } from "./output/terminal-text.js";

/** Runs the `taskledger` command line and resolves with its exit code; never calls `process.exit`. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = exitCodes.completed;
  const program = new Command("taskledger")
    .description(
      "Plan a request into sub-tasks, run each as a fresh opencode session, judge, retry and report.",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  const exit = (code: number) => {
    exitCode = code;
  };
  addRunCommand(program, io, exit);
  addPlanCommand(program, io, exit);
  addResumeCommand(program, io, exit);
  addDemoCommand(program, io, exit);
  addUiCommand(program, io, exit);
  addMcpCommand(withRunOptions, program, io, exit);
  addWorkerCommand(program, io, exit);
  addCleanCommand(program, io, exit);
  addDaemonCommand(program, io, exit);

  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    return reportError(error, io);
  }
}

function reportError(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? exitCodes.completed : exitCodes.usage;
  }
  const c = colorsFor(io.stderr, io.env);
  // A message may quote what a model answered.
  const message = (text: string) => terminalText(text, { multiline: true });
  if (
    error instanceof UsageError ||
    InvalidConfigError.isInstance(error) ||
    InvalidRequestError.isInstance(error) ||
    // `--sandbox required` where the OS sandbox cannot work: the machine is the caller's to fix.
    SandboxUnavailableError.isInstance(error) ||
    // Where the run was pointed (no repository, a detached HEAD, no git) is the caller's to fix.
    (WorkspaceError.isInstance(error) && error.reason !== "git-failed")
  ) {
    io.stderr.write(`${c.red("error:")} ${message(error.message)}\n`);
    return exitCodes.usage;
  }
  if (TaskLedgerError.isInstance(error)) {
    io.stderr.write(`${c.red("error:")} ${message(error.message)} ${c.dim(`[${error.code}]`)}\n`);
    return error.code === "aborted" ? exitCodes.cancelled : exitCodes.notCompleted;
  }
  io.stderr.write(
    `${c.red("error:")} ${message(error instanceof Error ? error.message : String(error))}\n`,
  );
  return exitCodes.notCompleted;
}
