// Helpers the CLI's tests share. Not part of the package: tsconfig.build.json leaves this folder out.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { resolve } from "node:path";
import { PassThrough } from "node:stream";
import { definedOnly } from "@taskledger/core";
import { git, poolDirectory } from "@taskledger/git-workspace";
import type { CliIo } from "../cli-io.js";

export { killProcessesUnder, processesUnder } from "@taskledger/testing";

/** The CLI's streams as strings: what a person would have seen on stdout and stderr. */
export function captureIo(overrides: Partial<CliIo> = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d) => {
    out += d;
  });
  stderr.on("data", (d) => {
    err += d;
  });
  const io: CliIo = {
    stdout,
    stderr,
    stdin: new PassThrough(),
    env: { CI: "true" },
    cwd: process.cwd(),
    signal: new AbortController().signal,
    ...overrides,
  };
  return { io, out: () => out, err: () => err };
}

/** A terminal as far as the CLI can tell: both ends claim to be TTYs. */
export function terminal(env: Record<string, string>) {
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  const stdout = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
  let screen = "";
  stdout.on("data", (d) => {
    screen += d;
  });
  const io: CliIo = {
    stdin,
    stdout,
    stderr: new PassThrough().resume(),
    env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env },
    cwd: process.cwd(),
    signal: new AbortController().signal,
  };
  /** Answers the next prompt that contains `question`. */
  const answer = async (question: string, text: string) => {
    while (!screen.includes(question)) await new Promise((r) => setTimeout(r, 20));
    screen = screen.replace(question, "");
    stdin.write(`${text}\n`);
  };
  return { io, answer, screen: () => screen };
}

/** The built CLI (`npm run build`): what a user runs, in a process of its own. */
export const builtCli = resolve(import.meta.dirname, "../../dist/bin.js");

export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts the built CLI with `argv` (as in CI); `exit` holds its status and all it printed. `env`
 * is laid over the test's own (an `undefined` value removes the variable).
 */
export function spawnCli(
  argv: string[],
  env: Record<string, string | undefined> = {},
): { child: ChildProcess; exit: Promise<CliExit> } {
  const child = spawn(process.execPath, [builtCli, ...argv], {
    env: definedOnly({ ...process.env, CI: "true", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += d;
  });
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const exit = new Promise<CliExit>((done) =>
    child.on("exit", (code, signal) => done({ code, signal, stdout, stderr })),
  );
  return { child, exit };
}

/** The options that point the CLI's manager at a scripted server's OpenAI-compatible face. */
export function compatibleArgs(baseURL: string, model = "m"): string[] {
  return ["--provider", "openai-compatible", "--model", model, "--base-url", baseURL];
}

/**
 * The worktrees a repository has besides its own tree once runs ended: `outside` those not in its
 * slot pool (a run's own, left behind), `held` the pool's slots a run still holds.
 */
export async function worktreesLeft(repo: string): Promise<{ outside: string[]; held: string[] }> {
  const pool = await poolDirectory(repo);
  const { stdout } = await git(["worktree", "list", "--porcelain"], { cwd: repo });
  const worktrees = stdout
    .split("\n")
    .filter((line) => line.startsWith("worktree "))
    .map((line) => line.slice("worktree ".length))
    .slice(1);
  const files = existsSync(pool) ? await readdir(pool) : [];
  return {
    outside: worktrees.filter((path) => !path.startsWith(`${pool}/`)),
    held: files.filter((file) => file.endsWith(".lock")),
  };
}
