import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { bindToHost, type HostBinding } from "@taskledger/process";
import { bridgesAt, sweepDeadBridges } from "./runtime-bridges.js";

type Srt = typeof import("@anthropic-ai/sandbox-runtime");
export type SandboxManager = Srt["SandboxManager"];

/** Whether the OS sandbox works in this process, and why not. */
export type Availability = { ok: true; platform: string } | { ok: false; reason: string };

/**
 * The runtime's manager is one per process (its proxies, its violation log): every sandbox of the
 * process shares it, and the hosts they allow are the union of theirs.
 */
class SharedRuntime {
  private started: Promise<SandboxManager> | undefined;
  /** The runtime's host-side bridges, killed by a watchdog if this process dies holding them. */
  private bridges: HostBinding | undefined;
  private readonly hosts = new Map<symbol, readonly string[]>();
  private readonly serving = new Set<symbol>();
  private readonly availability = new Map<string, Promise<Availability>>();

  /** Probes once per PATH: the platform, the programs it needs, a confined `true` that runs. */
  available(): Promise<Availability> {
    const path = process.env.PATH ?? "";
    let known = this.availability.get(path);
    if (!known) {
      known = this.probe();
      this.availability.set(path, known);
    }
    return known;
  }

  async acquire(owner: symbol, hosts: readonly string[], serves = false): Promise<SandboxManager> {
    this.hosts.set(owner, hosts);
    if (serves) this.serving.add(owner);
    const manager = await this.manager();
    manager.updateConfig(this.config());
    return manager;
  }

  async release(owner: symbol): Promise<void> {
    this.serving.delete(owner);
    if (!this.hosts.delete(owner) || !this.started) return;
    const manager = await this.started;
    if (this.hosts.size > 0) return manager.updateConfig(this.config());
    // The last sandbox of the process: its proxies must not keep the host alive.
    this.started = undefined;
    // Taken now: a sandbox acquired during the reset starts bridges (and a binding) of its own.
    const bridges = this.bridges;
    this.bridges = undefined;
    await manager.reset();
    bridges?.release();
  }

  private manager(): Promise<SandboxManager> {
    this.started ??= import("@anthropic-ai/sandbox-runtime").then(async ({ SandboxManager }) => {
      // What a host killed with `kill -9` before its watchdog took over left running.
      await sweepDeadBridges();
      const listening = signalListeners();
      // `true`: the runtime records what it refused (writes, hosts) per launch.
      await SandboxManager.initialize(this.config(), undefined, true);
      keepDefaultSignals(listening);
      // The runtime ends its bridges on a normal exit; a watchdog ends them after any other.
      this.bridges = bindToHost(
        bridgesAt([
          SandboxManager.getLinuxHttpSocketPath(),
          SandboxManager.getLinuxSocksSocketPath(),
        ]),
      );
      return SandboxManager;
    });
    return this.started;
  }

  private config() {
    const allowedDomains = [...new Set([...this.hosts.values()].flat())];
    // A server the host reaches needs a Unix socket inside, which the runtime's seccomp filter
    // would refuse: with one, the host's socket directories are hidden instead (socketDirs).
    const allowAllUnixSockets = this.serving.size > 0;
    return {
      network: { allowedDomains, deniedDomains: [], allowAllUnixSockets },
      filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
    };
  }

  private async probe(): Promise<Availability> {
    let srt: Srt;
    try {
      srt = await import("@anthropic-ai/sandbox-runtime");
    } catch (error) {
      return { ok: false, reason: `@anthropic-ai/sandbox-runtime did not load (${String(error)})` };
    }
    const manager = srt.SandboxManager;
    if (!manager.isSupportedPlatform()) {
      return { ok: false, reason: `the OS sandbox does not cover ${process.platform}` };
    }
    const deps = manager.checkDependencies();
    if (deps.errors.length > 0) return { ok: false, reason: deps.errors.join("; ") };
    const owner = Symbol("probe");
    try {
      const ready = await this.acquire(owner, []);
      const { argv, env } = await ready.wrapWithSandboxArgv(
        "true",
        "bash",
        { filesystem: { allowWrite: [], denyRead: [], denyWrite: [] } },
        undefined,
        tmpdir(),
      );
      const end = await run(argv, env as Record<string, string>);
      if (end.code !== 0) {
        const why = end.stderr.trim().split("\n").at(-1) ?? `exit ${end.code}`;
        return { ok: false, reason: `a confined process could not start (${why.slice(0, 200)})` };
      }
      return { ok: true, platform: process.platform };
    } catch (error) {
      return { ok: false, reason: `the OS sandbox did not start (${String(error).slice(0, 200)})` };
    } finally {
      await this.release(owner);
    }
  }
}

export const sharedRuntime = new SharedRuntime();

const endingSignals = ["SIGINT", "SIGTERM"] as const;
let signalsKept = false;

function signalListeners(): number[] {
  return endingSignals.map((signal) => process.listenerCount(signal));
}

/**
 * The runtime stops its bridges on SIGINT and SIGTERM with listeners of its own, once per process,
 * and a listener takes away Node's default of ending the process: a host that has none of its own
 * when the signal comes still ends by it.
 */
function keepDefaultSignals(before: number[]): void {
  if (signalsKept) return;
  signalsKept = true;
  endingSignals.forEach((signal, index) => {
    if (before[index] !== 0 || process.listenerCount(signal) === 0) return;
    // Runs after the runtime's listener, which has stopped the bridges by then.
    process.once(signal, () => {
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  });
}

function run(
  argv: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ code: null, stderr: error.message });
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
