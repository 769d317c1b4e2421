/**
 * The OS boundary every attempt, check and setup command runs inside (`@taskledger/sandbox`
 * implements it). Core only carries it from the host to the parts that start processes.
 */

/** `auto` confines where the OS sandbox works and says once why not; `required` refuses to run without it. */
export type SandboxMode = "auto" | "required" | "off";

export const sandboxModes: readonly SandboxMode[] = ["auto", "required", "off"];

/** One thing the sandbox refused an attempt: a path written, a file read, a host contacted. */
export interface SandboxRefusal {
  kind: "write" | "read" | "network";
  /** The path or `host:port`. */
  target: string;
  /** What refused it or the line that showed it, bounded. */
  detail?: string;
}

/** A process to start inside the boundary. */
export interface SandboxLaunch {
  file: string;
  args: readonly string[];
  /** Its working directory: writable inside the sandbox. */
  cwd: string;
  env: Record<string, string>;
  /** More directories it may write (its private home and temp directory). */
  write?: readonly string[];
  /** Directories it may read though they lie in a denied region (its own binary's package). */
  read?: readonly string[];
  /**
   * A TCP port the process listens on inside the sandbox (a server's) that the host must reach:
   * the launch then names the host-side `127.0.0.1` port that leads to it.
   */
  expose?: number;
}

/** The same process as it is started confined (or unchanged, when the sandbox is off). */
export interface SandboxedLaunch {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** The host-side port that reaches `expose`, when asked for. */
  exposedPort?: number;
  /**
   * What the sandbox refused this launch so far (bounded): from the runtime's own record, and from
   * `output` (what the launch printed, its tools' results) where a refusal shows only there; a
   * relative path there is taken from `cwd` (default the launch's).
   */
  refusals(output?: string, cwd?: string): SandboxRefusal[];
  /**
   * True for a process the sandbox runs for this launch (its bridges and forwarders, and the
   * copies they fork per connection): never one of the agent's to be killed with its tools.
   */
  isHelper?(pid: number): boolean;
  /** Frees what the launch held (its bridges, its per-launch allowances); call once it ended. */
  release(): Promise<void>;
}

export type SandboxStatus =
  | { confined: true; mode: SandboxMode; platform: string }
  | { confined: false; mode: SandboxMode; reason: string };

/** Confines a process tree: writes only where allowed, no credential store, only allowed hosts. */
export interface Sandbox {
  readonly mode: SandboxMode;
  /** Whether launches are confined here, and why not; settles the `auto` choice once. */
  status(): Promise<SandboxStatus>;
  wrap(launch: SandboxLaunch): Promise<SandboxedLaunch>;
  close(): Promise<void>;
}

/** Starts a launch unconfined: the sandbox is off or cannot work here. */
export function unconfined(launch: SandboxLaunch): SandboxedLaunch {
  return {
    file: launch.file,
    args: [...launch.args],
    env: launch.env,
    ...(launch.expose === undefined ? {} : { exposedPort: launch.expose }),
    refusals: () => [],
    release: async () => {},
  };
}

/** A process environment as a launch takes it (`SandboxLaunch.env`): its unset entries left out. */
export function definedOnly(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) kept[key] = value;
  return kept;
}
