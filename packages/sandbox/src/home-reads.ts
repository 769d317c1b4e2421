import { existsSync, lstatSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import {
  basename,
  delimiter,
  dirname,
  isAbsolute,
  join,
  normalize,
  relative,
  sep,
} from "node:path";
import { InvalidConfigError } from "@taskledger/core";
import { atOrUnder, real, strictlyUnder } from "./path-relations.js";
import { toolchainRoots } from "./toolchain-roots.js";

/**
 * One `homeReads` entry, normalized: `~` (the whole home, as before the home was hidden), a path
 * under it (`~/.config/myapp`) or an absolute path. Anything else is an `InvalidConfigError`.
 */
export function parseHomeRead(entry: string): string {
  const given = JSON.stringify(entry);
  if (typeof entry !== "string" || entry.trim() === "" || entry.includes("\0")) {
    throw new InvalidConfigError(`a home read must be a path; got ${given}`);
  }
  if (entry === "~" || entry === "~/") return "~";
  if (entry.startsWith("~/")) {
    const rest = normalize(entry.slice(2)).replace(/\/+$/, "");
    if (rest === "." || rest === "") return "~";
    if (rest === ".." || rest.startsWith(`..${sep}`)) {
      throw new InvalidConfigError(`a home read must stay in the home; got ${given}`);
    }
    return `~/${rest}`;
  }
  if (isAbsolute(entry)) return normalize(entry).replace(/(.)\/+$/, "$1");
  throw new InvalidConfigError(
    `a home read must be ~, a path starting with ~/ or an absolute path; got ${given}`,
  );
}

/** `~` and `~/…` as paths in `home`. */
export function inHome(path: string, home: string): string {
  if (path === "~") return home;
  return path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** What of a launch decides what it reads in the home, besides the sandbox's own settings. */
export interface HomeReadsInput {
  /** The launch's PATH: its directories in the home, and where their links lead, are read. */
  path: string | undefined;
  /** The launch's program: its install is read when it lies in the home (an agent's binary). */
  program: string;
}

/**
 * What every launch of a sandbox reads in the user's home when the home is hidden: the toolchain
 * roots, the project's own widening (`homeReads`), the toolchains on the launch's PATH, the
 * launch's program and the sandbox runtime's own files (its seccomp helper runs inside). The
 * project and the launch's write and read paths are the sandbox's to add.
 */
export class HomeReads {
  /** False when the whole home is read (`~` among the widened paths, or no home to hide). */
  readonly hidden: boolean;
  private readonly fixed: string[];
  private readonly links = new Map<string, { stamp: number; targets: string[] }>();

  /**
   * `widened` are the project's entries (`parseHomeRead`'s form); `denied` what no launch reads
   * (the credential stores, the run store, the cache directory): a widened path at or beneath one
   * of them, or outside the home, is an `InvalidConfigError` naming it.
   */
  constructor(
    readonly home: string,
    widened: readonly string[],
    private readonly denied: readonly string[],
  ) {
    const entries = widened.map((entry) => parseHomeRead(entry));
    for (const entry of entries) {
      const path = inHome(entry, home);
      if (!atOrUnder(path, home)) {
        throw new InvalidConfigError(
          `the home read ${entry} lies outside the home (${home}), which every launch reads`,
        );
      }
      const refused = denied.find((deny) => atOrUnder(path, deny));
      if (refused !== undefined) {
        throw new InvalidConfigError(
          `the home read ${entry} is at or beneath ${refused}, which no launch reads (a credential store, the run store or taskledger's cache)`,
        );
      }
    }
    this.hidden = isAbsolute(home) && home !== "/" && existsSync(home) && !entries.includes("~");
    this.fixed = [...toolchainRoots, ...entries].map((entry) => inHome(entry, home));
  }

  /** The paths of the home one launch reads: those that exist, by the names they are used by. */
  of(input: HomeReadsInput): string[] {
    if (!this.hidden) return [];
    const found = new Set<string>();
    const add = (path: string | undefined) => {
      if (path === undefined || !strictlyUnder(path, this.home) || found.has(path)) return;
      // Never what no launch reads (a PATH entry in a kept slot, in the cache directory).
      if (this.denied.some((deny) => atOrUnder(path, deny))) return;
      if (lstatSync(path, { throwIfNoEntry: false })) found.add(path);
    };
    for (const path of this.fixed) add(path);
    for (const dir of (input.path ?? "").split(delimiter)) {
      if (!isAbsolute(dir) || !strictlyUnder(dir, this.home)) continue;
      add(this.installOf(dir));
      for (const target of this.linkTargets(dir)) add(this.installOf(dirname(target)));
    }
    if (isAbsolute(input.program)) {
      add(this.installOf(dirname(input.program)));
      add(this.installOf(dirname(real(input.program))));
    }
    add(runtimePackage());
    // One mount each: a path inside another bound back comes with it.
    return [...found].filter((path) => ![...found].some((other) => strictlyUnder(path, other)));
  }

  /**
   * The runtime's own writable paths in the user's home (npm's log directory) that lie beneath one
   * of `reads`: bound back read-only over them, they would stop being writable, so they are listed
   * as the launch's write paths. Only when this home is the one the runtime knows (the process's).
   */
  runtimeWrites(reads: readonly string[]): string[] {
    if (reads.length === 0 || real(this.home) !== real(homedir())) return [];
    return runtimeHomeWrites
      .map((path) => inHome(path, this.home))
      .filter((path) => existsSync(path) && reads.some((read) => strictlyUnder(path, read)));
  }

  /**
   * The install a directory in the home belongs to: the outermost `node_modules` above it (a
   * package's launcher finds its platform binary beside it), the prefix of a `bin`, `sbin` or
   * `shims` directory (its `lib` and `share`), else the directory; never the home itself.
   */
  private installOf(dir: string): string | undefined {
    if (!strictlyUnder(dir, this.home)) return undefined;
    const parts = relative(this.home, dir).split(sep);
    const modules = parts.indexOf("node_modules");
    if (modules >= 0) return join(this.home, ...parts.slice(0, modules + 1));
    const prefix = dirname(dir);
    return ["bin", "sbin", "shims"].includes(basename(dir)) && prefix !== this.home ? prefix : dir;
  }

  /** Where the links in a PATH directory of the home lead, in the home; kept per its mtime. */
  private linkTargets(dir: string): string[] {
    const stamp = statSync(dir, { throwIfNoEntry: false })?.mtimeMs;
    if (stamp === undefined) return [];
    const known = this.links.get(dir);
    if (known?.stamp === stamp) return known.targets;
    const targets: string[] = [];
    try {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (!entry.isSymbolicLink()) continue;
        const target = real(join(dir, entry.name));
        if (strictlyUnder(target, this.home) && !atOrUnder(target, dir)) targets.push(target);
      }
    } catch {
      // An unreadable directory leads nowhere.
    }
    this.links.set(dir, { stamp, targets });
    return targets;
  }
}

/** The write paths a read-only path bound back over a hidden directory would cover (see roomReads). */
export function writesBeneath(reads: readonly string[], write: readonly string[]): string[] {
  if (reads.length === 0 || process.platform !== "linux") return [];
  const places = reads.map(real);
  return write.filter((path) => places.some((read) => strictlyUnder(real(path), read)));
}

/** What the runtime makes writable in the user's home unasked (`HOME_CONVENIENCE_WRITE_DIRS`). */
const runtimeHomeWrites = ["~/.npm/_logs"];

let runtimeDir: string | null | undefined;

/** The sandbox runtime's package directory (its `apply-seccomp` runs inside every launch). */
function runtimePackage(): string | undefined {
  if (runtimeDir === undefined) {
    runtimeDir = null;
    try {
      let dir = dirname(createRequire(import.meta.url).resolve("@anthropic-ai/sandbox-runtime"));
      while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
      runtimeDir = dir;
    } catch {
      // Not resolvable from here: nothing of it to read back.
    }
  }
  return runtimeDir ?? undefined;
}
