import {
  connectDaemon,
  DaemonService,
  type DaemonStatus,
  daemonStatus,
  daemonStopTimeoutMs,
  type StoppedDaemon,
  stopDaemon,
} from "@taskledger/daemon";
import { cacheDirectory } from "@taskledger/git-workspace";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import {
  daemonAddress,
  daemonBuild,
  daemonIdleSeconds,
  daemonStart,
} from "../runtime/daemon-link.js";

/**
 * `taskledger daemon status|start|stop`: the per-user service that keeps each kept slot's agent
 * server running between runs. `serve` is what `start` (and a run) launches in the background.
 */
export function addDaemonCommand(program: Command, io: CliIo, exit: (code: number) => void) {
  const daemon = program
    .command("daemon")
    .description("the background service that keeps agent servers warm between runs");
  daemon
    .command("status")
    .description("whether it runs, and what it keeps")
    .option("--json", "print the status as JSON")
    .action(async (raw: { json?: boolean }) => {
      const status = await daemonStatus(daemonAddress());
      if (raw.json) io.stdout.write(`${JSON.stringify(status ?? { running: false }, null, 2)}\n`);
      else io.stdout.write(status ? describe(status) : "The taskledger daemon is not running.\n");
      exit(exitCodes.completed);
    });
  daemon
    .command("start")
    .description("start it now (a run starts it when needed)")
    .option("--idle <seconds>", "stop after this long with no run (default 600)")
    .action(async (raw: { idle?: string }) => {
      const idleSeconds = daemonIdleSeconds(raw.idle, io.env);
      const connection = await connectDaemon({
        ...daemonStart(),
        start: true,
        ...(idleSeconds === undefined ? {} : { idleSeconds }),
        abortSignal: io.signal,
      });
      connection?.close();
      const status = await daemonStatus(daemonAddress());
      io.stdout.write(status ? describe(status) : "The taskledger daemon did not start.\n");
      exit(status ? exitCodes.completed : exitCodes.notCompleted);
    });
  daemon
    .command("stop")
    .description("stop it and every server it keeps")
    .action(async () => {
      const stopped = await stopDaemon(daemonAddress());
      if (stopped === undefined) {
        io.stdout.write("The taskledger daemon is not running.\n");
      } else if (stopped.left.length === 0) {
        const servers = stopped.status ? `, ${stopped.status.servers} server(s)` : "";
        io.stdout.write(`Stopped the taskledger daemon (process ${stopped.pid}${servers}).\n`);
      } else {
        io.stderr.write(`${stillRunning(stopped)}\n`);
      }
      exit(stopped && stopped.left.length > 0 ? exitCodes.notCompleted : exitCodes.completed);
    });
  daemon
    .command("serve", { hidden: true })
    .description("run the service in the foreground")
    .option("--idle <seconds>", "stop after this long with no run (default 600)")
    .action(async (raw: { idle?: string }) => {
      const idleSeconds = daemonIdleSeconds(raw.idle, io.env);
      const service = new DaemonService({
        cacheDir: cacheDirectory(),
        build: daemonBuild(),
        ...(idleSeconds === undefined ? {} : { idleMs: idleSeconds * 1000 }),
        log: (line) => io.stdout.write(`${line}\n`),
      });
      // Another daemon holds the directory: it serves.
      if (!(await service.listen())) {
        exit(exitCodes.completed);
        return;
      }
      const onSignal = () => void service.stop("signalled");
      io.signal.addEventListener("abort", onSignal, { once: true });
      await service.stopped;
      exit(exitCodes.completed);
    });
}

/** What a stop that timed out says: which of the daemon's processes still run. */
export function stillRunning(stopped: StoppedDaemon): string {
  return `taskledger: the daemon (process ${stopped.pid}) was told to stop, but after ${daemonStopTimeoutMs / 1000} s ${stopped.left.length} of its processes still run: ${stopped.left.join(", ")}`;
}

function describe(status: DaemonStatus): string {
  const lines = [
    `The taskledger daemon runs as process ${status.pid} (taskledger ${status.version}, since ${status.startedAt}).`,
    `  socket: ${status.socket}`,
    `  runs connected: ${status.connections}; attempts running: ${status.attempts}`,
    `  agent servers: ${status.servers} running, ${status.serverStarts} started in all, for ${status.executors} setting(s)`,
    `  stops after ${Math.round(status.idleMs / 1000)} s with no run`,
  ];
  return `${lines.join("\n")}\n`;
}
