// Helpers the CLI's tests share. Not part of the package: tsconfig.build.json leaves this folder out.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough } from "node:stream";
import { definedOnly, type RunEvent } from "@taskledger/core";
import {
  createCodexExecutor,
  createOpencodeExecutor,
  createOpencodeServerExecutor,
  type OpencodeExecutorOptions,
} from "@taskledger/executor";
import { git, poolDirectory } from "@taskledger/git-workspace";
import {
  createGitRepo,
  createModelServer,
  type ModelServer,
  type ModelServerOptions,
  processesUnder,
  scriptedOpencodeProvider,
} from "@taskledger/testing";
import { afterAll, afterEach, beforeAll } from "vitest";
import { runCli } from "../cli.js";
import type { CliIo } from "../cli-io.js";
import type { JsonReport } from "../output/json-report.js";
import { compatibleProviderId } from "../runtime/runtime.js";

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
 * Starts the built CLI with `argv` (as in CI), in `cwd` when given; `exit` holds its status and
 * all it printed, `stdout` and `stderr` what it printed so far. `env` is laid over the test's own
 * (an `undefined` value removes the variable).
 */
export function spawnCli(
  argv: string[],
  env: Record<string, string | undefined> = {},
  cwd?: string,
): { child: ChildProcess; exit: Promise<CliExit>; stdout(): string; stderr(): string } {
  const child = spawn(process.execPath, [builtCli, ...argv], {
    ...(cwd === undefined ? {} : { cwd }),
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
  return { child, exit, stdout: () => stdout, stderr: () => stderr };
}

/** The options that point the CLI's manager at a scripted server's OpenAI-compatible face. */
export function compatibleArgs(baseURL: string, model = "m"): string[] {
  return ["--provider", "openai-compatible", "--model", model, "--base-url", baseURL];
}

/**
 * `compatibleArgs` and the agents' model, `agent` on the same face: what a run needs to talk to a
 * scripted server alone.
 */
export function agentArgs(baseURL: string, agent = "agent", manager = "m"): string[] {
  return [...compatibleArgs(baseURL, manager), "--agent-model", `${compatibleProviderId}/${agent}`];
}

/**
 * `compatibleArgs` and Codex as the agent, on `model` at the same server's Responses face: for
 * runs whose subject is not the agent. Codex is one native binary: an attempt costs about a
 * twentieth of an opencode start's CPU (docs/performance.md). Its key comes from `codexEnv`.
 */
export function codexArgs(baseURL: string, model = "agent", manager = "m"): string[] {
  return [...compatibleArgs(baseURL, manager), ...codexAgentArgs(baseURL, model)];
}

/** The agent's part of `codexArgs`: Codex on `model` at `baseURL`'s Responses face. */
export function codexAgentArgs(baseURL: string, model = "agent"): string[] {
  return ["--agent", "codex", "--agent-model", model, "--agent-base-url", baseURL];
}

/** A run's options on `agent` at `baseURL` (`agentArgs` or `codexArgs`), and the env it needs. */
export function runOn(agent: "opencode" | "codex") {
  return agent === "codex"
    ? { args: codexArgs, env: codexEnv as Record<string, string> }
    : { args: agentArgs, env: {} };
}

/** The key Codex sends to the scripted server (any key: the server checks none). */
export const codexEnv = { OPENAI_API_KEY: "scripted-key" } as const;

/**
 * For this file's in-process runs on Codex: the key in this process's environment, where an
 * agent's environment comes from, while the file's tests run (the built CLI gets `codexEnv`).
 */
export function useCodexKey(): void {
  const before = process.env.OPENAI_API_KEY;
  beforeAll(() => {
    process.env.OPENAI_API_KEY = codexEnv.OPENAI_API_KEY;
  });
  afterAll(() => {
    if (before === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = before;
  });
}

/**
 * `taskledger run <request> --yes --json ...argv` in this process: its exit code, what it printed
 * and the JSON report it printed (an error naming the exit code and stderr when it printed none).
 */
export async function runJson(request: string, argv: string[], overrides: Partial<CliIo> = {}) {
  const t = captureIo(overrides);
  const code = await runCli(["run", request, "--yes", "--json", ...argv], t.io);
  if (!t.out()) throw new Error(`no report (exit ${code}): ${t.err()}`);
  return { ...t, code, report: JSON.parse(t.out()) as JsonReport };
}

/**
 * A new directory under the temp directory (named `prefix`…) for one run: `work`, made here, its
 * cwd, and `store`, its run store.
 */
export async function runDirectories(
  prefix: string,
): Promise<{ root: string; cwd: string; store: string }> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const cwd = join(root, "work");
  await mkdir(cwd);
  return { root, cwd, store: join(root, "store") };
}

/** A new repository under the temp directory (named `prefix`…) whose one commit holds `files`. */
export function tempRepo(prefix: string, files: Record<string, string>): string {
  return createGitRepo(mkdtempSync(join(tmpdir(), prefix)), files);
}

/** What tests make with `testScratch`. */
export interface TestScratch {
  /** A scripted model server. */
  server(options: ModelServerOptions): Promise<ModelServer>;
  /** A new directory under the temp directory, named `prefix`…. */
  directory(prefix: string): Promise<string>;
}

/**
 * Scripted model servers and directories for tests: closed and removed in the order they were
 * made, after each test (`"each"`), or after the file's tests (`"all"`: for concurrent tests).
 */
export function testScratch(after: "each" | "all" = "each"): TestScratch {
  const cleanups: (() => Promise<unknown>)[] = [];
  (after === "each" ? afterEach : afterAll)(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  return {
    async server(options) {
      const server = await createModelServer(options);
      cleanups.push(() => server.close());
      return server;
    },
    async directory(prefix) {
      const dir = await mkdtemp(join(tmpdir(), prefix));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
  };
}

/**
 * An opencode executor on `server`'s scripted model, in `root`: its `work` directory for a run's
 * cwd and `attempts` for the executor's work root (both made here); `options` laid over. One
 * `opencode run` per attempt (the cli executor).
 */
export async function scriptedOpencode(
  server: ModelServer,
  root: string,
  options: Partial<OpencodeExecutorOptions> = {},
) {
  const { cwd, workRoot, settings } = await scriptedSettings(server, root);
  return { cwd, workRoot, executor: createOpencodeExecutor({ ...settings, ...options }) };
}

/** `scriptedOpencode` on kept servers: the server executor a run has by default; close it. */
export async function scriptedOpencodeServer(server: ModelServer, root: string) {
  const { cwd, workRoot, settings } = await scriptedSettings(server, root);
  return { cwd, workRoot, executor: createOpencodeServerExecutor(settings) };
}

/**
 * A Codex executor on `server`'s Responses face, in `root` as `scriptedOpencode` lays it out: a
 * real agent for in-process runs whose subject is not the agent (an attempt costs a twentieth of
 * an opencode start's CPU). `requestMaxRetries`: Codex's own retries of a failed request.
 */
export async function scriptedCodex(server: ModelServer, root: string, requestMaxRetries = 0) {
  const { cwd, workRoot } = await scriptedDirectories(root);
  const executor = createCodexExecutor({
    model: "agent",
    workRoot,
    timeoutMs: 90_000,
    provider: { baseUrl: server.openaiBaseURL, envKey: "SCRIPTED_KEY", requestMaxRetries },
    env: { SCRIPTED_KEY: codexEnv.OPENAI_API_KEY },
  });
  return { cwd, workRoot, executor };
}

/** `root`'s `work` (a run's cwd) and `attempts` (the executor's work root), made here. */
async function scriptedDirectories(root: string) {
  const cwd = join(root, "work");
  const workRoot = join(root, "attempts");
  await Promise.all([mkdir(cwd), mkdir(workRoot)]);
  return { cwd, workRoot };
}

async function scriptedSettings(server: ModelServer, root: string) {
  const { cwd, workRoot } = await scriptedDirectories(root);
  const settings = {
    model: "scripted/test-model",
    config: { provider: scriptedOpencodeProvider(server) },
    workRoot,
    timeoutMs: 90_000,
  };
  return { cwd, workRoot, settings };
}

/** The records of the one run a store holds, as written so far (none before its log exists). */
export async function runLogOf(store: string): Promise<RunEvent[]> {
  const [file] = existsSync(store) ? await readdir(store) : [];
  if (!file) return [];
  return (await readFile(join(store, file), "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);
}

/** The processes still running under `root` or in the slot pool of the repository at `cwd`. */
export async function processesLeft(root: string, cwd: string): Promise<number[]> {
  return [...(await processesUnder(root)), ...(await processesUnder(await poolDirectory(cwd)))];
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
