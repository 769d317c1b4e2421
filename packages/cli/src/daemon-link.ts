import type { Sandbox } from "@taskledger/core";
import { cacheDirectory } from "@taskledger/git-workspace";
import type { RunOptions } from "./cli-options.js";
import { connectDaemon, type DaemonConnection, daemonEntry } from "./daemon-client.js";
import { daemonIdleSeconds } from "./daemon-command.js";
import type { DaemonLink } from "./daemon-executor.js";
import type { DaemonSandboxSpec } from "./daemon-protocol.js";

/** The settings each sandbox this process made was made from, so the daemon makes the same. */
export const sandboxSpecs = new WeakMap<Sandbox, DaemonSandboxSpec>();

/** `--no-daemon` or `TASKLEDGER_DAEMON=off` (also `0`, `false`) keep the servers in-process. */
export function usesDaemon(
  options: Pick<RunOptions, "daemon">,
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  const set = env.TASKLEDGER_DAEMON?.toLowerCase();
  // Run from its sources (no built entry to start it by), the CLI keeps its servers in-process.
  const built = daemonEntry() !== undefined;
  return built && options.daemon && set !== "off" && set !== "0" && set !== "false";
}

/**
 * The process's way to its daemon: connected (and started) on first use, again after the daemon
 * went away; when none can start, one line and the attempts run in this process.
 */
export function daemonLink(
  env: Readonly<Record<string, string | undefined>>,
  warn: (line: string) => void,
): DaemonLink & { close(): void } {
  let current: Promise<DaemonConnection | undefined> | undefined;
  let told = false;
  const cacheDir = cacheDirectory();
  const idleSeconds = daemonIdleSeconds(undefined, env);
  return {
    async connection(signal) {
      const open = await current;
      if (open?.closed) current = undefined;
      if (current === undefined) {
        const connecting = connectDaemon({
          cacheDir,
          start: true,
          ...(idleSeconds === undefined ? {} : { idleSeconds }),
          ...(signal ? { abortSignal: signal } : {}),
        }).catch((error: unknown) => {
          // A cancelled wait is not a daemon that cannot start: the next call tries again.
          if (signal?.aborted) {
            current = undefined;
            throw error;
          }
          if (!told)
            warn(
              `the taskledger daemon is unavailable (${(error as Error).message}); agent servers run in this process`,
            );
          told = true;
          return undefined;
        });
        current = connecting;
      }
      return current;
    },
    sandboxSpec: (sandbox) => sandboxSpecs.get(sandbox),
    close() {
      void current?.then(
        (connection) => connection?.close(),
        () => {},
      );
    },
  };
}
