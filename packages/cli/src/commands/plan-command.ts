import type { Command } from "commander";
import type { CliIo } from "../cli-io.js";
import type { RawRunOptions } from "../options/cli-options.js";
import { readRequest } from "../options/request-source.js";
import { runOptionsOf, withRequest } from "../options/run-flags.js";
import { runCommand } from "./run-command.js";

/** `taskledger plan [request...]`: print the Task Ledger the manager would run. */
export function addPlanCommand(program: Command, io: CliIo, exit: (code: number) => void): void {
  withRequest(program.command("plan"), "what to plan")
    .description("print the Task Ledger the manager would run")
    .action(async (words: string[], raw: RawRunOptions) => {
      const options = { ...(await runOptionsOf(raw, io)), dryRun: true };
      const source = await readRequest(words, raw.requestFile, io);
      exit(await runCommand(source.request, options, io, source.fromStdin));
    });
}
