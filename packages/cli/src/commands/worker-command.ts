import { hostname } from "node:os";
import { resolve } from "node:path";
import { parseAgentModel } from "@taskledger/executor";
import { defaultModels } from "@taskledger/llm";
import type { JobAgentSettings } from "@taskledger/queue";
import type { Command } from "commander";
import { type CliIo, exitCodes } from "../cli-io.js";
import { parseRunOptions, UsageError } from "../options/cli-options.js";
import { createAgentExecutor } from "../runtime/agent-executor.js";
import { loadQueue } from "../runtime/queue-module.js";
import { agentConfig, runSandbox } from "../runtime/runtime.js";

interface RawWorkerOptions {
  redis?: string;
  concurrency?: string;
  provider?: string;
  baseUrl?: string;
  agent?: string;
  agentModel?: string;
  opencodeConfig?: string;
  lockDuration?: string;
  workDir?: string;
  passEnv?: string[];
  agentBaseUrl?: string;
  sandbox?: string;
  allowHost?: string[];
}

/**
 * `taskledger worker --redis URL`: takes attempts from the queue until Ctrl-C, running each with
 * opencode in a worktree of its own clone of the run's remote. Its keys come from its own
 * environment, never from a job.
 */
export function addWorkerCommand(program: Command, io: CliIo, exit: (code: number) => void) {
  program
    .command("worker")
    .description("run attempts that `taskledger run --redis` sends, until Ctrl-C")
    .requiredOption("--redis <url>", "the Redis the coordinator uses (redis:// or rediss://)")
    .option("--concurrency <n>", "attempts at once in this worker", "1")
    .option(
      "--provider <name>",
      "provider of the agent model, for its endpoint and keys",
      "anthropic",
    )
    .option("--base-url <url>", "API base URL (openai-compatible agent models)")
    .option(
      "--agent <name>",
      "agent for jobs whose model names none: opencode (default), claude-code or codex",
    )
    .option("--agent-model <model>", "agent model when a job names none")
    .option("--opencode-config <file>", "JSON merged into each opencode session's config")
    .option("--lock-duration <ms>", "how soon a dead worker's attempt is noticed", "30000")
    .option("--work-dir <dir>", "where clones and worktrees go (default: a temporary directory)")
    .option(
      "--sandbox <mode>",
      "the OS sandbox around every attempt and setup: auto (default), required or off",
    )
    .option(
      "--allow-host <host>",
      "with the sandbox: a host the agents may reach besides their model endpoint (repeatable)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option(
      "--pass-env <name>",
      "a host environment variable the agents get besides their own list (repeatable)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option("--agent-base-url <url>", "where the agent sends its model calls")
    .action(async (raw: RawWorkerOptions) => {
      exit(await workerCommand(raw, io));
    });
}

async function workerCommand(raw: RawWorkerOptions, io: CliIo): Promise<number> {
  const redis = raw.redis ?? "";
  if (!/^rediss?:\/\//.test(redis))
    throw new UsageError("--redis must be a redis:// or rediss:// URL");
  const provider = raw.provider ?? "anthropic";
  const fallbackModel =
    provider in defaultModels
      ? `${provider}/${defaultModels[provider as keyof typeof defaultModels].agent}`
      : undefined;
  const agent = raw.agent ?? "opencode";
  const agentModel = raw.agentModel ?? (agent === "opencode" ? fallbackModel : undefined);
  if (!agentModel && agent === "opencode")
    throw new UsageError(`--agent-model is required with --provider ${provider}`);
  const options = await parseRunOptions(
    {
      provider,
      model: agentModel?.split("/").slice(1).join("/") || "agent",
      agent,
      ...(agentModel ? { agentModel } : {}),
      ...(raw.baseUrl ? { baseUrl: raw.baseUrl } : {}),
      ...(raw.opencodeConfig ? { opencodeConfig: raw.opencodeConfig } : {}),
      concurrency: raw.concurrency,
      ...(raw.passEnv ? { passEnv: raw.passEnv } : {}),
      ...(raw.agentBaseUrl ? { agentBaseUrl: raw.agentBaseUrl } : {}),
      ...(raw.sandbox ? { sandbox: raw.sandbox } : {}),
      ...(raw.allowHost ? { allowHost: raw.allowHost } : {}),
    },
    io.cwd,
  );
  const lockDurationMs = Number(raw.lockDuration);
  if (!Number.isInteger(lockDurationMs) || lockDurationMs < 1000)
    throw new UsageError("--lock-duration must be a whole number of milliseconds, 1000 or more");
  // Each agent setting a job asks for (`claude-code:sonnet` names its agent) gets an executor the
  // worker keeps between jobs: its opencode servers stay up in the kept worktrees. The watchdog
  // guards a server for its whole life, so a killed worker leaves none running.
  const executorFor = ({ agentModel: asked }: JobAgentSettings) => {
    const parsed = asked === undefined ? undefined : parseAgentModel(asked);
    return createAgentExecutor({
      agent: parsed?.agent ?? options.agent,
      agentModel: parsed?.model ?? options.agentModel,
      opencodeConfig: agentConfig(options),
      executor: "server",
      concurrency: options.concurrency,
      env: process.env,
      ...(options.passEnv ? { passEnv: options.passEnv } : {}),
      ...(options.agentBaseUrl ? { agentBaseUrl: options.agentBaseUrl } : {}),
    });
  };
  const sandbox = runSandbox({ ...options, executor: "server" }, io.env, (line) =>
    io.stderr.write(`warning: ${line}\n`),
  );
  // `required` where it cannot work: refused before any job is taken.
  await sandbox.status();
  const { jobLine, redactRedisUrl, startAttemptWorker } = await loadQueue();
  const worker = await startAttemptWorker(
    {
      redis,
      executorFor,
      sandbox,
      concurrency: options.concurrency,
      lockDurationMs,
      ...(raw.workDir ? { workDir: resolve(io.cwd, raw.workDir) } : {}),
      onJob: (event) => io.stderr.write(`${jobLine(event)}\n`),
    },
    io.signal,
  );
  io.stderr.write(
    `worker ${hostname()}:${process.pid} taking attempts from ${redactRedisUrl(redis)} (${options.concurrency} at once)\n`,
  );
  if (!io.signal.aborted)
    await new Promise((done) => io.signal.addEventListener("abort", done, { once: true }));
  await worker.close();
  await sandbox.close();
  io.stderr.write("worker stopped\n");
  return exitCodes.cancelled;
}
