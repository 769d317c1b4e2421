import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ReviewPlan, TaskRun } from "@taskledger/core";
import { firstAnswer, ReviewBroker, startUiServer, type UiServer } from "@taskledger/ui";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import { type RunOptions, UsageError } from "../options/cli-options.js";

/** `run`'s flags for the page. */
export interface UiFlags {
  ui?: boolean;
  port?: string;
}

/** Adds `--ui` and `--port` to `run` and `resume`. */
export function withUiOptions(command: Command): Command {
  return command
    .option(
      "--ui",
      "serve a page on 127.0.0.1 that shows the run live and can review and cancel it",
    )
    .option("--port <n>", "port of the --ui page (default: a free one)");
}

/** `taskledger ui --store DIR [--port N]`: serves the page until Ctrl-C. */
export function addUiCommand(program: Command, io: CliIo, done: (code: number) => void): void {
  program
    .command("ui")
    .description("serve a page on 127.0.0.1 over the runs of a store, live while they run")
    .requiredOption("--store <dir>", "the run store's directory (as given to run --store)")
    .option("--port <n>", "port to listen on (default: a free one)")
    .action(async (raw: { store: string; port?: string }) => {
      const server = await startUiServer({
        store: resolve(io.cwd, raw.store),
        port: portOf(raw.port),
      });
      io.stdout.write(
        `taskledger ui: ${server.url}\nCtrl-C stops the page (no run is affected).\n`,
      );
      await new Promise<void>((stop) => {
        if (io.signal.aborted) stop();
        else io.signal.addEventListener("abort", () => stop(), { once: true });
      });
      // Runs are other processes': only the page stops.
      io.stdout.write("Stopping the page; no run is cancelled.\n");
      await server.close();
      done(exitCodes.completed);
    });
}

/** The page of one `run --ui`: what the run command uses instead of its own io and reviewer. */
export interface RunPage {
  /** The options with a store (a temporary one when none was given: the page reads the log). */
  options: RunOptions;
  /** The command's io, its signal also aborted by the page's Cancel. */
  io: CliIo;
  /** The terminal's reviewer raced against the page's; undefined with --yes. */
  reviewer: ((terminal: ReviewPlan | undefined) => ReviewPlan) | undefined;
  /** Starts serving; inside the command's try, so `close` always follows. */
  listen(): Promise<void>;
  attach(run: TaskRun): void;
  close(): Promise<void>;
}

/** Prepares the page; nothing is served (and nothing made on disk) until `listen`. */
export function openRunPage(options: RunOptions, io: CliIo, flags: UiFlags): RunPage {
  const port = portOf(flags.port);
  // The store makes its directory at the first record.
  const store = options.store ?? join(tmpdir(), `taskledger-run-${randomUUID()}`);
  const cancel = new AbortController();
  const reviews = options.yes ? undefined : new ReviewBroker(options.maxSubTasks);
  const human = options.json ? io.stderr : io.stdout;
  let run: TaskRun | undefined;
  let server: UiServer | undefined;
  return {
    options: { ...options, store },
    io: { ...io, signal: AbortSignal.any([io.signal, cancel.signal]) },
    reviewer: reviews ? (terminal) => firstAnswer(reviews.reviewPlan, terminal) : undefined,
    listen: async () => {
      server = await startUiServer({
        store,
        port,
        live: { runId: () => run?.runId, reviews, cancel: () => cancel.abort() },
      });
    },
    attach: (started) => {
      run = started;
      if (!server) return;
      const page = server;
      // What agents do now reaches the page from here: agent events are not logged.
      started.on("agent-event", (event) => page.showAgentEvent(event));
      human.write(`Follow and steer this run at ${server.url}#/runs/${started.runId}\n`);
      if (!options.store) human.write(`Its log is kept in ${store} (resume --store ${store}).\n`);
    },
    close: async () => {
      if (!server) return;
      await server.close();
      if (run) human.write(`See the run again with: taskledger ui --store ${store}\n`);
    },
  };
}

function portOf(value: string | undefined): number {
  if (value === undefined) return 0;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535; got "${value}"`);
  return port;
}
