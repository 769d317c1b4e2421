import { resolve } from "node:path";
import { stopDaemon } from "@taskledger/daemon";
import { type CleanResult, cleanRepository } from "@taskledger/git-workspace";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import { colorsFor } from "../output/terminal-session.js";
import { terminalText } from "../output/terminal-text.js";
import { daemonAddress } from "../runtime/daemon-link.js";
import { stillRunning } from "./daemon-command.js";

interface RawCleanOptions {
  cwd?: string;
  dryRun?: boolean;
  all?: boolean;
  json?: boolean;
}

/**
 * `taskledger clean`: removes the worktree slots a repository keeps between runs and the refs of
 * ended runs; `--dry-run` lists them.
 */
export function addCleanCommand(program: Command, io: CliIo, exit: (code: number) => void) {
  program
    .command("clean")
    .description(
      "stop the daemon, remove the worktree slots kept between runs and the refs of ended runs (branches taskledger/<run> stay)",
    )
    .option("--cwd <dir>", "a directory in the repository", ".")
    .option("--dry-run", "list what would be removed, remove nothing")
    .option("--all", "also the refs of runs that never ended (interrupted or cancelled: resumable)")
    .option("--json", "print what was removed as JSON")
    .action(async (raw: RawCleanOptions) => {
      // The daemon's servers may be serving the slots removed here: it is stopped first.
      // Its whole process tree is gone before a slot is removed; past the wait, it says so.
      const daemon = raw.dryRun ? undefined : await stopDaemon(daemonAddress());
      if (daemon && daemon.left.length > 0) io.stderr.write(`${stillRunning(daemon)}\n`);
      else if (daemon && !raw.json) {
        io.stdout.write(`Stopped the taskledger daemon (process ${daemon.pid}).\n`);
      }
      const result = await cleanRepository({
        cwd: resolve(io.cwd, raw.cwd ?? "."),
        dryRun: raw.dryRun === true,
        all: raw.all === true,
        abortSignal: io.signal,
      });
      if (raw.json) io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else io.stdout.write(describeClean(result, raw.dryRun === true, io));
      exit(exitCodes.completed);
    });
}

function describeClean(result: CleanResult, dryRun: boolean, io: CliIo): string {
  const c = colorsFor(io.stdout, io.env);
  const verb = dryRun ? "Would remove" : "Removed";
  const lines = [`Slots of ${result.root} are kept in ${result.slotDirectory}.`];
  const { removed, held } = result.slots;
  lines.push(
    `${verb} ${removed.length} slot(s)${removed.length > 0 ? `, ${formatBytes(result.bytes)} on disk` : ""}.`,
  );
  for (const slot of removed) {
    const used = slot.lastUsed > 0 ? new Date(slot.lastUsed).toISOString() : "never";
    const size = slot.bytes === undefined ? "" : `, ${formatBytes(slot.bytes)}`;
    lines.push(c.dim(`  ${slot.name} (last used ${used}${size})`));
  }
  for (const slot of held) {
    lines.push(
      c.yellow(
        `  kept ${slot.name}: held by run ${slot.heldBy!.runId} (process ${slot.heldBy!.pid})`,
      ),
    );
  }
  const { runs } = result;
  const refs = runs.removed.reduce((sum, run) => sum + run.refs, 0);
  lines.push(
    `${verb} the refs of ${runs.removed.length} run(s) (${refs} ref(s) under refs/taskledger/).`,
  );
  const unended = runs.kept.length;
  if (unended > 0) {
    lines.push(
      c.dim(
        `  kept the refs of ${unended} run(s) that never ended (running, or resumable with \`taskledger resume\`)${dryRun ? "" : "; --all removes them too, except a running one's"}.`,
      ),
    );
  }
  if (result.worktrees.length > 0) {
    lines.push(`${verb} ${result.worktrees.length} worktree(s) left by earlier runs.`);
  }
  return `${terminalText(lines.join("\n"), { multiline: true })}\n`;
}

function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}
