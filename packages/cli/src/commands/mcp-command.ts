import { homedir } from "node:os";
import { join } from "node:path";
import { FileRunStore, recoverRun } from "@taskledger/core";
import type { RunHost } from "@taskledger/mcp";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import {
  integer,
  parseRunOptions,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "../options/cli-options.js";
import { hostSettingsOf } from "../options/host-settings.js";
import { terminalText } from "../output/terminal-text.js";
import { createRuntime } from "../runtime/runtime.js";
import { resumeOptions } from "./resume-command.js";

interface RawMcpOptions extends RawRunOptions {
  maxRuns?: string;
  maxWait?: string;
  releaseIdle?: string;
}

/** Where runs are logged when `--store` is not given: the user's state directory. */
export function defaultStore(env: CliIo["env"]): string {
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(state, "taskledger", "runs");
}

/**
 * `taskledger mcp`: serves taskledger's tools to an MCP client (a coding agent) on stdio until the
 * client closes stdin; stdout carries only the protocol, the log goes to stderr.
 */
export function addMcpCommand(
  withRunOptions: (command: Command) => Command,
  program: Command,
  io: CliIo,
  done: (code: number) => void,
): void {
  withRunOptions(program.command("mcp"))
    .description(
      "serve taskledger's tools to a coding agent over MCP (stdio): plan, start, wait, review, cancel, report, resume",
    )
    .option(
      "--isolation <mode>",
      "auto: a git worktree per attempt inside a git repository, else shared; worktree; shared",
      "auto",
    )
    .option("--no-apply", "with worktrees, leave each result on its branch instead of in the tree")
    .option("--max-runs <n>", "runs at once", "2")
    .option("--max-wait <seconds>", "longest wait_for_run call", "600")
    .option(
      "--release-idle <seconds>",
      "stop the idle opencode servers this long after the last run ended",
      "600",
    )
    .action(async (raw: RawMcpOptions) => {
      // An in-process host: its rooms live in it, released after `--release-idle`.
      const options = {
        ...(await parseRunOptions({ ...raw, store: raw.store ?? defaultStore(io.env) }, io.cwd)),
        daemon: false,
      };
      const log = (line: string) => io.stderr.write(`taskledger mcp: ${terminalText(line)}\n`);
      const runtimes = new SharedRuntime(() =>
        createRuntime(options, io.env, undefined, (w) => log(w.message), log),
      );
      try {
        await runtimes.current().ready(io.signal);
        // The MCP SDK loads with the command, not with every command line.
        const { serveStdio } = await import("@taskledger/mcp");
        await serveStdio({
          host: runHost(options, runtimes, io, log),
          startDirectory: options.cwd,
          env: io.env,
          log,
          maxRuns: integer("--max-runs", raw.maxRuns, 2, 1, 16),
          maxWaitSeconds: integer("--max-wait", raw.maxWait, 600, 1, 3600),
          idleReleaseSeconds: integer("--release-idle", raw.releaseIdle, 600, 1, 86_400),
          stdin: io.stdin,
          stdout: io.stdout,
          signal: io.signal,
        });
      } finally {
        await runtimes.release();
      }
      done(exitCodes.completed);
    });
}

type Runtime = ReturnType<typeof createRuntime>;

/** The server's runtime, made when a plan or run needs it and closed (its servers stopped) when idle. */
class SharedRuntime {
  #current: Runtime | undefined;

  constructor(private readonly make: () => Runtime) {}

  current(): Runtime {
    this.#current ??= this.make();
    return this.#current;
  }

  async release(): Promise<void> {
    const runtime = this.#current;
    // Taken away first: a run that starts while it closes gets a new one.
    this.#current = undefined;
    await runtime?.close();
  }
}

function runHost(
  options: RunOptions,
  runtimes: SharedRuntime,
  io: CliIo,
  log: (line: string) => void,
): RunHost {
  if (!options.store) throw new UsageError("taskledger mcp needs a store");
  return {
    plan: (request, { abortSignal }) => runtimes.current().manager.plan(request, { abortSignal }),
    start: (request, runOptions) =>
      runtimes.current().start(request, {
        ...runOptions,
        // Logged with the run, so it resumes with the store alone.
        settings: { host: { ...hostSettingsOf(options) } },
      }),
    // A run resumes with the options it logged (it may come from `taskledger run`).
    async resume(runId, runOptions) {
      const recovered = recoverRun(runOptions.history, runId);
      const { options: logged } = await resumeOptions(
        recovered,
        { store: options.store },
        new Set(),
        io.cwd,
      );
      const own = createRuntime(
        { ...logged, daemon: false },
        io.env,
        undefined,
        (w) => log(w.message),
        log,
      );
      const run = await own.resume(runId, runOptions);
      void run.result.finally(() => own.close()).catch(() => {});
      return run;
    },
    store: new FileRunStore(options.store),
    storeDirectory: options.store,
    maxSubTasks: options.maxSubTasks,
    release: () => runtimes.release(),
  };
}
