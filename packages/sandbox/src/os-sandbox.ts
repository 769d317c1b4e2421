import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import {
  commandLineOf,
  createProcessDir,
  InvalidConfigError,
  type Sandbox,
  type SandboxedLaunch,
  type SandboxLaunch,
  type SandboxMode,
  type SandboxStatus,
  SandboxUnavailableError,
  sandboxModes,
  sweepDeadProcessDirs,
  unconfined,
} from "@taskledger/core";
import { credentialStores, socketDirs } from "./credential-stores.js";
import { gitPaths } from "./git-paths.js";
import { HomeReads, inHome, writesBeneath } from "./home-reads.js";
import { innerScript } from "./inner-script.js";
import { endLaunch, launchMarkerName, pidNamespaceFile } from "./launch-end.js";
import { parseHost } from "./network-hosts.js";
import { atOrUnder, real } from "./path-relations.js";
import { withReadOnly } from "./read-only-home.js";
import { refusalsOf, refusedWritesIn } from "./refusals.js";
import { type SandboxManager, sharedRuntime } from "./sandbox-runtime.js";
import { roomReads, worktreeTop } from "./worktree-rooms.js";

export interface SandboxOptions {
  /** Default `auto`: confined where the OS sandbox works, else one line (`onUnconfined`) and on. */
  mode?: SandboxMode;
  /**
   * Hosts every launch may reach (`api.anthropic.com`, `*.example.com`, `127.0.0.1:8080`): the
   * agents' model endpoints and the project's own. Nothing else answers.
   */
  allowHosts?: readonly string[];
  /** Paths no launch reads, beyond the credential stores (the run store, other slots, …). */
  denyRead?: readonly string[];
  /** The user's home, where the credential stores are; default the OS's (`HOME`). */
  home?: string;
  /**
   * What launches read in the user's home besides the project, the toolchain roots
   * (`toolchainRoots`), the toolchains on their PATH and their program's install: `~/…` or
   * absolute paths in the home; `~` reads the whole home but the credential stores (the policy
   * before the home was hidden). A path at or beneath a denied one is an `InvalidConfigError`.
   */
  homeReads?: readonly string[];
  /**
   * Launches will serve a port to the host (`expose`: the opencode server executor). The runtime's
   * filter of Unix sockets is then off for the process (it would refuse the bridge), and the
   * host's socket directories are hidden instead; refused writes are then read from the output.
   */
  serves?: boolean;
  /** Told once, in one line that names the fix, when `auto` runs unconfined. */
  onUnconfined?: (line: string) => void;
  /**
   * Told, in one line, when a launch's own processes (bubblewrap's, its relays and forwarders)
   * still ran when `release()` stopped waiting for them, and were killed; default stderr.
   */
  onLeftover?: (line: string) => void;
}

/** The fix for a machine where the OS sandbox cannot start, by platform. */
const fixes: Record<string, string> = {
  linux:
    "install bubblewrap, socat and ripgrep (sudo apt-get install -y bubblewrap socat ripgrep) and allow unprivileged user namespaces",
  darwin: "install ripgrep (brew install ripgrep)",
};

/**
 * An OS sandbox around each launch (bubblewrap + a network namespace on Linux, Seatbelt on
 * macOS, through `@anthropic-ai/sandbox-runtime`): it writes only in its working directory, the
 * directories it is given and its worktree's own git state; reads no credential store; reaches
 * only the allowed hosts; and what it starts dies with it.
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const mode = options.mode ?? "auto";
  if (!sandboxModes.includes(mode)) {
    throw new InvalidConfigError(
      `sandbox mode must be one of ${sandboxModes.join(", ")}, got ${JSON.stringify(mode)}`,
    );
  }
  const hosts = (options.allowHosts ?? []).map((host) => parseHost(host));
  const home = options.home ?? homedir();
  const denied = [
    ...credentialStores.map((path) => inHome(path, home)),
    ...(options.denyRead ?? []),
  ];
  return new OsSandbox(mode, hosts, options, new HomeReads(home, options.homeReads ?? [], denied));
}

class OsSandbox implements Sandbox {
  private readonly owner = Symbol("sandbox");
  private settled: Promise<SandboxStatus> | undefined;
  private manager: SandboxManager | undefined;
  private closed = false;

  constructor(
    readonly mode: SandboxMode,
    private readonly hosts: ReturnType<typeof parseHost>[],
    private readonly options: SandboxOptions,
    /** What a launch reads in the user's home, which is otherwise hidden. */
    private readonly homeReads: HomeReads,
  ) {}

  status(): Promise<SandboxStatus> {
    this.settled ??= this.settle();
    return this.settled;
  }

  private async settle(): Promise<SandboxStatus> {
    const mode = this.mode;
    if (mode === "off") return { confined: false, mode, reason: "the sandbox is off" };
    const availability = await sharedRuntime.available();
    if (!availability.ok) {
      const fix = fixes[process.platform] ?? "run on Linux or macOS";
      if (mode === "required") {
        throw new SandboxUnavailableError(`--sandbox required, but ${availability.reason}: ${fix}`);
      }
      this.options.onUnconfined?.(
        `taskledger: agents run unconfined: ${availability.reason}; to confine them, ${fix} (--sandbox off silences this)`,
      );
      return { confined: false, mode, reason: availability.reason };
    }
    // Launch directories of a host killed before it released them (named after their process).
    await sweepDeadProcessDirs(socketParent(), launchDirPrefix);
    this.manager = await sharedRuntime.acquire(
      this.owner,
      this.hosts.map((host) => host.pattern),
      this.options.serves === true,
    );
    return { confined: true, mode, platform: availability.platform };
  }

  async wrap(launch: SandboxLaunch): Promise<SandboxedLaunch> {
    const status = await this.status();
    if (!status.confined || this.closed || !this.manager) return unconfined(launch);
    const manager = this.manager;
    if (launch.expose !== undefined && this.options.serves !== true) {
      throw new InvalidConfigError(
        "a launch that serves a port to the host needs a sandbox created with serves: true",
      );
    }
    const id = randomBytes(16).toString("base64url");
    const own = await createProcessDir(socketParent(), launchDirPrefix);
    const git = await gitPaths(launch.cwd);
    const socket = join(own, "s");
    // Every process of the launch's own (bubblewrap's two, the runtime's relays, the forwarders
    // and the bridge inside) carries this entry; the program itself does not (the script unsets it).
    const marker = `${launchMarkerName}=${own}`;
    const write = [launch.cwd, ...(launch.write ?? []), ...git.write, own];
    const home = this.homeReads.home;
    // The home hidden but what a build needs (below): another project's `.env`, `~/.pgpass`;
    // unless a path the launch writes, or another hidden one, holds it whole.
    const hideHome =
      this.homeReads.hidden &&
      ![...write, ...socketDirs, ...(this.options.denyRead ?? [])].some((dir) =>
        atOrUnder(real(home), real(dir)),
      );
    const denyRead = [
      ...(hideHome ? [home] : []),
      ...credentialStores.map((path) => inHome(path, home)),
      ...socketDirs,
      ...(this.options.denyRead ?? []),
    ];
    // Its worktree whole, when a hidden directory holds it: git finds the top from a package;
    // its repository's main worktree too (the project), but never the whole home.
    const project = [...worktrees(launch), ...mainWorktree(git.read)].filter(
      (dir) => !atOrUnder(home, dir),
    );
    const rooms = roomReads(denyRead, project, write);
    const toolchains = hideHome
      ? this.homeReads.of({ path: launch.env.PATH, program: launch.file })
      : [];
    // What the runtime keeps writable in the home (npm's logs), beneath a root bound back read-only.
    const kept = this.homeReads.runtimeWrites(toolchains);
    const script = innerScript({
      loopback: process.platform === "linux" ? this.hosts.filter((host) => host.loopback) : [],
      ...(launch.expose === undefined ? {} : { expose: { port: launch.expose, socket } }),
      namespaceFile: join(own, pidNamespaceFile),
      env: pick(launch.env, ["TMPDIR", "TMP", "TEMP"]),
      file: launch.file,
      args: launch.args,
    });
    const { argv, env } = await manager.wrapWithSandboxArgv(
      script,
      "bash",
      {
        filesystem: {
          allowWrite: [...write, ...kept],
          denyWrite: [],
          // A write path beneath a read-only path bound back is denied again and bound writable.
          denyRead: [
            ...denyRead,
            ...new Set([...rooms.deny, ...writesBeneath(toolchains, [...write, ...kept])]),
          ],
          allowRead: [...write, ...git.read, ...rooms.read, ...toolchains, ...(launch.read ?? [])],
        },
      },
      undefined,
      launch.cwd,
      { commandId: id, commandText: [launch.file, ...launch.args].join(" ").slice(0, 500) },
    );
    const bridge = launch.expose === undefined ? undefined : await listenBridge(socket);
    // Linux: `[shell, "-c", bubblewrap's command line]`; its hidden home refuses writes.
    const command = argv[2];
    const readOnly =
      hideHome && process.platform === "linux" && argv.length === 3 && command !== undefined
        ? withReadOnly(command, real(home))
        : undefined;
    return {
      file: argv[0] as string,
      args: readOnly === undefined ? argv.slice(1) : [argv[1] as string, readOnly],
      env: { ...launch.env, ...added(env), [launchMarkerName]: own },
      ...(bridge ? { exposedPort: bridge.port } : {}),
      refusals: (output = "", cwd = launch.cwd) =>
        refusalsOf([
          ...manager
            .getSandboxViolationStore()
            .getViolationsForCommand(id)
            .map((violation) => violation.line),
          ...refusedWritesIn(output).map((path) => `deny write ${resolve(cwd, path)}`),
        ]),
      isHelper: (pid) => {
        const words = commandLineOf(pid);
        return (
          basename(words[0] ?? "") === "socat" &&
          words.some((word) => word.includes(own) || word.startsWith("PROXY:localhost:"))
        );
      },
      release: async () => {
        bridge?.server.close();
        // Over once its processes are gone: bubblewrap's pid 1 and the relays inside die after
        // its outer process, in a session of their own.
        await endLaunch(marker, join(own, pidNamespaceFile), this.options.onLeftover ?? warn);
        await rm(own, { recursive: true, force: true }).catch(() => {});
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await sharedRuntime.release(this.owner);
  }
}

function warn(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A launch's own directory: `taskledger-sandbox-<pid>-XXXXXX`, swept once its process is gone. */
const launchDirPrefix = "taskledger-sandbox-";

/**
 * Where a launch's own directory (and its bridge's Unix socket) goes: the temp directory, unless
 * its path is so long that a socket under it passes the OS's limit of about 104 bytes (an agent's
 * private TMPDIR inside another's, as when `taskledger mcp` runs under opencode).
 */
function socketParent(): string {
  const dir = tmpdir();
  return dir.length > 60 && process.platform !== "win32" ? "/tmp" : dir;
}

/**
 * The worktrees a launch works in: its directory's and, for a server whose sessions work in the
 * directory it may write (opencode's), each written directory's.
 */
function worktrees(launch: SandboxLaunch): string[] {
  return [launch.cwd, ...(launch.write ?? [])].flatMap((dir) => worktreeTop(dir) ?? []);
}

/** The repository's main worktree, from its git directory (`<top>/.git`); none for a bare one. */
function mainWorktree(gitDirs: readonly string[]): string[] {
  return gitDirs.flatMap((dir) => (basename(dir) === ".git" ? [dirname(dir)] : []));
}

/** The variables the runtime adds for a launch (its proxies, git's ssh through them). */
function added(env: NodeJS.ProcessEnv): Record<string, string> {
  const extra: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && process.env[key] !== value) extra[key] = value;
  }
  return extra;
}

function pick(env: Record<string, string>, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(keys.flatMap((key) => (env[key] ? [[key, env[key]]] : [])));
}

/** How long a connection waits for the socket inside to answer (it starts with the launch). */
const bridgeConnectTries = 200;

/** The Unix socket served inside, connected; retried while the launch is still starting. */
function connectInside(socket: string, tries = bridgeConnectTries): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const inner = connect(socket);
    inner.once("connect", () => resolve(inner));
    inner.once("error", (error: NodeJS.ErrnoException) => {
      inner.destroy();
      const starting = error.code === "ENOENT" || error.code === "ECONNREFUSED";
      if (!starting || tries <= 1) return reject(error);
      setTimeout(() => connectInside(socket, tries - 1).then(resolve, reject), 25);
    });
  });
}

/** A host-side `127.0.0.1` port whose connections go to the Unix socket served inside. */
function listenBridge(socket: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer((client) => {
      client.pause();
      client.once("error", () => client.destroy());
      connectInside(socket).then(
        (inner) => {
          client.pipe(inner).pipe(client);
          client.resume();
          const end = () => {
            client.destroy();
            inner.destroy();
          };
          inner.once("error", end);
          client.once("close", end);
          inner.once("close", end);
        },
        () => client.destroy(),
      );
    });
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}
