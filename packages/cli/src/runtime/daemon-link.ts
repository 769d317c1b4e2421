import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Sandbox } from "@taskledger/core";
import {
  type ConnectOptions,
  connectDaemon,
  type DaemonAddress,
  type DaemonBuild,
  type DaemonConnection,
  type DaemonLink,
  type DaemonSandboxSpec,
} from "@taskledger/daemon";
import { cacheDirectory } from "@taskledger/git-workspace";
import { type RunOptions, UsageError } from "../options/cli-options.js";
import { cliVersion } from "./cli-version.js";

/** The built daemon's own entry (daemon-serve.js); undefined when run from the sources. */
export function daemonEntry(): string | undefined {
  const entry = fileURLToPath(new URL("./daemon-serve.js", import.meta.url));
  return existsSync(entry) ? entry : undefined;
}

/** This taskledger's version and build: a daemon of another is replaced, not used. */
export function daemonBuild(): DaemonBuild {
  const version = cliVersion();
  // The daemon's built code itself, so a rebuilt checkout of the same version replaces its old
  // daemon too.
  let build = version;
  try {
    const built = dirname(createRequire(import.meta.url).resolve("@taskledger/daemon"));
    const entry = daemonEntry();
    build = createHash("sha256")
      .update(readFileSync(join(built, "service.js")))
      .update(readFileSync(join(built, "daemon-executor.js")))
      // And the entry it runs as, built beside this file.
      .update(entry === undefined ? "" : readFileSync(entry))
      .digest("hex")
      .slice(0, 16);
  } catch {
    // Not built (tests from the sources): the version alone.
  }
  return { version, build };
}

/** The user's daemon as this CLI addresses it: the cache directory's, of this build. */
export function daemonAddress(): DaemonAddress {
  return { cacheDir: cacheDirectory(), build: daemonBuild() };
}

/**
 * The user's daemon and how to start it: `node <dist>/runtime/daemon-serve.js` in the foreground
 * (the service without the rest of the CLI); from the sources there is no built entry, so none
 * can be started.
 */
export function daemonStart(): Pick<ConnectOptions, "cacheDir" | "build" | "serveCommand"> {
  const entry = daemonEntry();
  return { ...daemonAddress(), ...(entry === undefined ? {} : { serveCommand: [entry] }) };
}

/** The settings each sandbox this process made was made from, so the daemon makes the same. */
export const sandboxSpecs = new WeakMap<Sandbox, DaemonSandboxSpec>();

/** `--idle <seconds>` or `TASKLEDGER_DAEMON_IDLE` (seconds): a positive whole number. */
export function daemonIdleSeconds(
  given: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): number | undefined {
  const raw = given ?? env.TASKLEDGER_DAEMON_IDLE;
  if (raw === undefined || raw === "") return undefined;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 7 * 24 * 3600) {
    throw new UsageError(
      `the daemon's idle time must be a whole number of seconds from 1 to 604800; got "${raw}"`,
    );
  }
  return seconds;
}

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
 * The process's way to its daemon: connected (and started) on first use or `start()`, again after
 * the daemon went away; when none can start, one line and the attempts run in this process.
 */
export function daemonLink(
  env: Readonly<Record<string, string | undefined>>,
  warn: (line: string) => void,
): DaemonLink & { start(signal?: AbortSignal): void; close(): void } {
  let current: Promise<DaemonConnection | undefined> | undefined;
  let told = false;
  const reach = daemonStart();
  const idleSeconds = daemonIdleSeconds(undefined, env);
  const link = {
    async connection(signal?: AbortSignal) {
      const open = await current;
      if (open?.closed) current = undefined;
      if (current === undefined) {
        const connecting = connectDaemon({
          ...reach,
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
    sandboxSpec: (sandbox: Sandbox) => sandboxSpecs.get(sandbox),
    // A run starts the daemon as it starts, beside its own checks and planning: its first
    // attempt then finds it listening instead of waiting for it to start.
    start(signal?: AbortSignal) {
      void link.connection(signal).catch(() => {});
    },
    close() {
      void current?.then(
        (connection) => connection?.close(),
        () => {},
      );
    },
  };
  return link;
}
