import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { EnvironmentSettings, Sandbox, SlotPreparation } from "@taskledger/core";
import { git, splitNul } from "../git/git.js";
import { copyDirectory, rebaseCopy } from "./copy-directory.js";
import { findDependencyDirectories } from "./dependency-directories.js";
import { defaultSetupInputs, runSetupCommand } from "./setup-command.js";
import { copyIncludedFiles, findIncludedFiles } from "./worktree-include.js";

// Named in a preparation; the rest are counted.
const maxNamedIncluded = 20;
const maxLoggedOutput = 2000;

/** What makes a slot an environment: the user's dependency directories, included files, setup. */
export class SlotEnvironment {
  private found: Promise<{ dependencies: string[]; included: string[] }> | undefined;

  constructor(
    private readonly root: string,
    private readonly prefix: string,
    private readonly runId: string,
    readonly settings: EnvironmentSettings,
    private readonly sandbox?: Sandbox,
  ) {}

  /** Looks once per run for what the user's tree has to give (dependencies, included files). */
  private discover(abortSignal?: AbortSignal) {
    this.found ??= (async () => {
      const dependencies = this.settings.dependencies
        ? await findDependencyDirectories(this.root, abortSignal)
        : [];
      const { files } = await findIncludedFiles(
        this.root,
        this.settings.include,
        dependencies,
        abortSignal,
      );
      return { dependencies, included: files };
    })();
    // A failed look (an abort) is tried again by the next slot.
    this.found.catch(() => {
      this.found = undefined;
    });
    return this.found;
  }

  /** Paths that must never enter an attempt's commit, whatever `.gitignore` says by then. */
  async neverCommitted(): Promise<string[]> {
    const { dependencies, included } = await this.discover();
    return [...dependencies, ...included];
  }

  /** What the slot's environment depends on at `start`: its lockfiles, the setup and the copies. */
  async keyAt(start: string, abortSignal?: AbortSignal): Promise<string> {
    const { dependencies } = await this.discover(abortSignal);
    const hash = createHash("sha256");
    // The setup runs in the run's directory; the copies are as fresh as the user's install.
    const installed = dependencies.map((path) => installedAt(join(this.root, path)));
    hash.update(
      JSON.stringify([this.settings.setup?.command ?? "", this.prefix, dependencies, installed]),
    );
    hash.update(await this.inputsAt(start, abortSignal));
    return hash.digest("hex");
  }

  // A commit's input files never change: listed once per commit, not once per attempt.
  private readonly inputsByCommit = new Map<string, Promise<string>>();

  /** The input files (lockfiles) at `start`, as `ls-tree` lines. */
  private inputsAt(start: string, abortSignal?: AbortSignal): Promise<string> {
    let inputs = this.inputsByCommit.get(start);
    if (!inputs) {
      const globs = this.settings.setup?.inputs ?? defaultSetupInputs;
      inputs = setupInputsAt(this.root, start, globs, abortSignal);
      // An aborted listing is not kept; the cache stays small (one entry per commit met).
      inputs.catch(() => this.inputsByCommit.delete(start));
      if (this.inputsByCommit.size >= 256) this.inputsByCommit.clear();
      this.inputsByCommit.set(start, inputs);
    }
    return inputs;
  }

  /**
   * Resets a used slot to `start` as a new worktree would hold it, except for its environment
   * (the copied dependencies and what the setup made) while `key` is the one it was made for.
   */
  async reset(slot: EnvironmentSlot, start: string, key: string, abortSignal: AbortSignal) {
    await resetWorktree(slot.path, start, slot.key === key ? slot.keep : [], abortSignal);
  }

  /**
   * Gives a slot the environment: included files every time (a reset removed them), and when the
   * slot is new or `key` differs from the one it was prepared for, fresh copies of the dependency
   * directories and the setup command. Returns what it did when it did more than include files.
   */
  async prepare(
    slot: EnvironmentSlot,
    key: string,
    abortSignal: AbortSignal,
  ): Promise<SlotPreparation | undefined> {
    const started = performance.now();
    const { dependencies, included } = await this.discover(abortSignal);
    if (slot.key === key) {
      await copyIncludedFiles(this.root, slot.path, included);
      return undefined;
    }
    const reason = slot.key === undefined ? "new" : "inputs-changed";
    slot.key = undefined;
    for (const path of dependencies) {
      const to = join(slot.path, path);
      await rm(to, { recursive: true, force: true });
      await copyDirectory(join(this.root, path), to, abortSignal);
      await rebaseCopy(to, this.root, slot.path);
    }
    const setup = this.settings.setup
      ? await runSetupCommand(
          this.settings.setup,
          resolve(slot.path, this.prefix),
          this.runId,
          abortSignal,
          this.sandbox,
        )
      : undefined;
    // What is ignored now is the environment (copies, what the setup made): kept on reset. With
    // neither, the slot is a clean checkout: nothing in it is ignored.
    slot.keep =
      dependencies.length > 0 || setup ? await ignoredEntries(slot.path, abortSignal) : [];
    slot.key = key;
    await copyIncludedFiles(this.root, slot.path, included);
    return {
      slot: slot.index,
      reason,
      dependencies,
      ...(dependencies.length > 0 ? { from: this.root } : {}),
      included: included.slice(0, maxNamedIncluded),
      includedCount: included.length,
      ...(setup && this.settings.setup
        ? {
            setup: {
              command: this.settings.setup.command,
              exitCode: setup.exitCode,
              durationMs: setup.durationMs,
              // The log keeps how it ended; the whole output would grow it past any bound.
              output: setup.output.slice(-maxLoggedOutput),
            },
          }
        : {}),
      durationMs: Math.round(performance.now() - started),
    };
  }
}

/** A slot as its environment knows it. */
export interface EnvironmentSlot {
  path: string;
  index: number;
  /** The environment key it was prepared for; undefined until it is. */
  key: string | undefined;
  /** Ignored paths its preparation left (collapsed to directories): kept while `key` holds. */
  keep: string[];
}

// Files package managers rewrite on every install, besides the directory itself.
const installMarkers = [
  ".package-lock.json",
  ".modules.yaml",
  ".yarn-state.yml",
  ".yarn-integrity",
  "pyvenv.cfg",
];

/** When the user's dependency directory was last installed into, as its modification times say. */
function installedAt(dir: string): number[] {
  return [dir, ...installMarkers.map((marker) => join(dir, marker))].map((path) => {
    try {
      return statSync(path).mtimeMs;
    } catch {
      return 0;
    }
  });
}

/**
 * The setup's input files (lockfiles, by default) at `commit`, as `ls-tree` lines: what says
 * whether an environment made at another commit still fits.
 */
export async function setupInputsAt(
  root: string,
  commit: string,
  globs: readonly string[],
  abortSignal?: AbortSignal,
): Promise<string> {
  const matchers = globs.map(globMatcher);
  const { stdout } = await git(["ls-tree", "-r", "-z", "--full-tree", commit], {
    cwd: root,
    abortSignal,
  });
  return stdout
    .split("\0")
    .filter((entry) => {
      const tab = entry.indexOf("\t");
      return tab !== -1 && matchers.some((matches) => matches(entry.slice(tab + 1)));
    })
    .join("\n");
}

/**
 * Puts a used worktree at `start` as a new one would hold it: every file of earlier work gone,
 * ignored ones too, except the paths in `keep` (an environment still right for `start`).
 */
export async function resetWorktree(
  path: string,
  start: string,
  keep: readonly string[],
  abortSignal: AbortSignal,
): Promise<void> {
  await git(["checkout", "-q", "-f", "--detach", start], { cwd: path, abortSignal });
  const patterns = keep.flatMap((kept) => ["-e", `/${escapeGitignore(kept)}`]);
  await git(["clean", "-q", "-ffdx", ...patterns], { cwd: path, abortSignal });
}

/** What is ignored in a worktree now, collapsed to directories: its environment after a setup. */
export async function ignoredEntries(slot: string, abortSignal: AbortSignal): Promise<string[]> {
  const { stdout } = await git(
    ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
    { cwd: slot, abortSignal },
  );
  return splitNul(stdout).map((entry) => entry.replace(/\/$/, ""));
}

/** A path as a gitignore pattern matching only itself. */
function escapeGitignore(path: string): string {
  return path.replace(/[\\*?[\]!# ]/g, (c) => `\\${c}`);
}

/** A file-name glob (`requirements*.txt`, or with a `/`, a path glob from the top; `**` spans directories). */
function globMatcher(glob: string): (path: string) => boolean {
  const source = glob
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((piece) => piece.replace(/[.+^${}()|[\]\\?]/g, "\\$&"))
        .join("[^/]*"),
    )
    .join(".*");
  const pattern = glob.includes("/")
    ? new RegExp(`^${source.replace(/^\//, "")}$`)
    : new RegExp(`(^|/)${source}$`);
  return (path) => pattern.test(path);
}
