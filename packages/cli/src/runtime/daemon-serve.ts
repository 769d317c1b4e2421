// The daemon's own process: `node <dist>/runtime/daemon-serve.js [--idle <seconds>]`, what a run
// starts in the background. It loads the service and what it needs, not the whole CLI (about a
// third of the CPU and wall time to listen: the run's first attempt may be waiting for it).
import { constants } from "node:os";
import { DaemonService } from "@taskledger/daemon";
import { cacheDirectory } from "@taskledger/git-workspace";
import { daemonBuild, daemonIdleSeconds } from "./daemon-link.js";

const at = process.argv.indexOf("--idle");
const idleSeconds = daemonIdleSeconds(at === -1 ? undefined : process.argv[at + 1], process.env);
const service = new DaemonService({
  cacheDir: cacheDirectory(),
  build: daemonBuild(),
  ...(idleSeconds === undefined ? {} : { idleMs: idleSeconds * 1000 }),
  log: (line) => process.stdout.write(`${line}\n`),
});
// Once: stop its servers; again: at once (as `taskledger daemon serve` does).
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(128 + (constants.signals[signal] ?? 0));
    stopping = true;
    void service.stop("signalled");
  });
}
// Another daemon holds the directory: it serves, this one ends.
if (await service.listen()) await service.stopped;
