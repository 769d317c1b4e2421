import {
  connectDaemon,
  DaemonService,
  type DaemonStatus,
  daemonStatus,
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
      const status = await stopDaemon(daemonAddress());
      io.stdout.write(
        status
          ? `Stopped the taskledger daemon (process ${status.pid}, ${status.servers} server(s)).\n`
          : "The taskledger daemon is not running.\n",
      );
      exit(exitCodes.completed);
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
