import { AbortedError, oneLine, WorkspaceError } from "@taskledger/core";
import { runCollected } from "./git-runner.js";

export interface GitOptions {
  cwd: string;
  /** Extra environment (a temporary index, say) over the sanitised one. */
  env?: Record<string, string>;
  /** Written to git's stdin (bytes as they are: a pack, say). */
  input?: string | Buffer;
  abortSignal?: AbortSignal | undefined;
  /** Exit codes that are answers rather than failures (merge-tree's 1 means "conflicts"). */
  okCodes?: readonly number[];
  /** Largest stdout kept; git is stopped past it. Default 16 MiB. */
  maxOutputBytes?: number;
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

const defaultMaxOutput = 16 * 1024 * 1024;
const stderrTail = 4096;

// Commits taskledger makes are its own; the user's hooks, auto-gc and pagers never run under it.
const fixedConfig = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "gc.auto=0",
  "-c",
  "maintenance.auto=false",
  "-c",
  "advice.detachedHead=false",
  "-c",
  "core.quotePath=false",
];

const identity = {
  GIT_AUTHOR_NAME: "taskledger",
  GIT_AUTHOR_EMAIL: "taskledger@localhost",
  GIT_COMMITTER_NAME: "taskledger",
  GIT_COMMITTER_EMAIL: "taskledger@localhost",
};

/** The host's environment without what would point git at another repository or index. */
function gitEnvironment(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|COMMON_DIR|NAMESPACE|PREFIX)$/.test(key))
      delete env[key];
  }
  return {
    ...env,
    ...identity,
    GIT_TERMINAL_PROMPT: "0",
    // Read-only commands (status, diff) must not take index.lock behind the user's back.
    GIT_OPTIONAL_LOCKS: "0",
    LC_ALL: "C",
    ...extra,
  };
}

/** Runs git without a shell, output bounded; a non-zero exit (not in `okCodes`) is a `WorkspaceError`. */
export async function git(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const { code, stdout, stderr } = await gitBytes(args, options);
  return { code, stdout: stdout.toString("utf8"), stderr };
}

/** `git`, its output kept as bytes (a pack, an object's content). */
export async function gitBytes(
  args: readonly string[],
  options: GitOptions,
): Promise<Omit<GitResult, "stdout"> & { stdout: Buffer }> {
  const signal = options.abortSignal;
  if (signal?.aborted) throw new AbortedError();
  const limit = options.maxOutputBytes ?? defaultMaxOutput;
  const output = await runCollected({
    command: "git",
    args: [...fixedConfig, ...args],
    cwd: options.cwd,
    env: gitEnvironment(options.env),
    input: options.input ?? "",
    maxOutputBytes: limit,
    stderrTail,
    abortSignal: signal,
  });
  if (output.aborted) throw new AbortedError();
  if (output.overLimit) {
    throw new WorkspaceError("git-failed", `git ${args[0]} wrote more than ${limit} bytes.`);
  }
  if (output.error) {
    const cause = Object.assign(new Error(output.error.message), { code: output.error.code });
    throw output.error.code === "ENOENT"
      ? new WorkspaceError(
          "git-missing",
          'git was not found on the PATH: install git, or run with isolation "shared".',
          { cause },
        )
      : new WorkspaceError("git-failed", `git could not start: ${output.error.message}`, { cause });
  }
  const exit = output.code ?? 128;
  if (exit !== 0 && !(options.okCodes ?? []).includes(exit)) {
    throw new WorkspaceError(
      "git-failed",
      `git ${args.join(" ").slice(0, 200)} failed (${output.signal ?? `exit ${exit}`}): ${oneLine(output.stderr, 600) || "no message"}`,
    );
  }
  return { code: exit, stdout: output.stdout, stderr: output.stderr };
}

/** Splits NUL-separated git output (`-z`) into its non-empty fields. */
export function splitNul(text: string): string[] {
  return text.split("\0").filter((field) => field.length > 0);
}
