import { resolve } from "node:path";
import { defaultRunSettings } from "@taskledger/core";
import type { Command } from "commander";
import type { CliIo } from "../cli-io.js";
import { maxSubTasksLimit, parseRunOptions, type RawRunOptions } from "./cli-options.js";
import { loadProjectConfig, projectConfigName } from "./project-config.js";

/** The options every command that runs a request takes (run, plan, resume, mcp). */
export const withRunOptions = (command: Command) =>
  command
    .option(
      "--provider <name>",
      "manager model provider: anthropic|openai|google|xai|openai-compatible",
      "anthropic",
    )
    .option("--model <id>", "manager model id (default per provider, see docs/cli.md)")
    .option("--base-url <url>", "API base URL (required for openai-compatible)")
    .option("--agent <name>", "the coding agent: opencode (default), claude-code or codex")
    .option(
      "--agent-model <model>",
      "the agent's model: provider/model for opencode (default: the provider's agent default, or --model when given); a model name for claude-code (default sonnet) and codex (required)",
    )
    .option("--opencode-config <file>", "JSON merged into each opencode session's config")
    .option("--cwd <dir>", "directory the agents work in", ".")
    .option("--concurrency <n>", "sub-tasks running at once (default 3)")
    .option("--max-retries <n>", "retries per sub-task", "2")
    .option(
      "--max-sub-tasks <n>",
      `largest plan accepted, 1 to ${maxSubTasksLimit}`,
      String(defaultRunSettings.maxSubTasks),
    )
    .option("--store <dir>", "directory for the run's durable log")
    .option(
      "--alternate-agent-model <model>",
      "agent model to try once when retries fail (repeatable); claude-code:<model>, codex:<model> or opencode:<provider/model> changes agent too",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option("--no-replan", "fail a sub-task instead of replanning it when its retries are spent")
    .option(
      "--best-of <n>",
      "parallel candidates (2 to 8) for each sub-task the planner marks risky, and once for any whose retries fail; the checks and one comparative judge call choose the one merged",
    )
    .option(
      "--best-of-all",
      "with --best-of: every sub-task gets candidates from its first attempt",
    )
    .option("--no-best-of-ladder", "with --best-of: no round of candidates after failed retries")
    .option(
      "--candidate-model <model>",
      "with --best-of: the candidates' agent models, in turn (repeatable; named as --alternate-agent-model)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option(
      "--integration <mode>",
      "when merged work is checked before it lands on the run's branch (the project's tests and typecheck, the run's and the sub-tasks' command checks): batch (default: completions close together checked together, a failing batch bisected), each, end (only the final result), off",
    )
    .option(
      "--no-acceptance",
      "do not judge the request as a whole once every sub-task is done (one model call), nor plan what it finds missing",
    )
    .option(
      "--acceptance-rounds <n>",
      "rounds of sub-tasks planned for what the acceptance finds missing, 0 to 5 (default 1)",
    )
    .option(
      "--no-project-checks",
      "do not add the project's own test and typecheck commands to the checks of sub-tasks that change files",
    )
    .option(
      "--executor <kind>",
      "server: sessions in running opencode servers (default); cli: a new opencode process per attempt",
    )
    .option("--max-cost <usd>", "money budget: start nothing new once the run has spent this")
    .option(
      "--prices <file>",
      'JSON prices for private or new models: {"provider/model": {"inputPerMillion": 3, "outputPerMillion": 15}}',
    )
    .option("--otlp <url>", "export the run's OpenTelemetry spans to this OTLP/HTTP endpoint")
    .option("--redis <url>", "send attempts to `taskledger worker`s through this Redis")
    .option("--remote <url>", "with --redis: the git remote workers fetch from and push to")
    .option(
      "--redis-timeout <ms>",
      "with --redis: fail once Redis is unreachable this long",
      "30000",
    )
    .option(
      "--stalled-check <ms>",
      "with --redis: how often to look for attempts whose worker died",
      "30000",
    )
    .option(
      "--worker-wait <ms>",
      "with --redis: fail an attempt that waited this long with no worker running",
      "300000",
    )
    .option(
      "--sandbox <mode>",
      "the OS sandbox around every agent, check and setup: auto (default: confined where it works, else one line and on), required (refuse to run without it), off",
    )
    .option(
      "--allow-host <host>",
      "with the sandbox: a host the agents may reach besides their model endpoint (repeatable; host, host:port, *.domain or a URL)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option("--json", "print the final report as JSON on stdout; progress goes to stderr")
    .option(
      "--pass-env <name>",
      "a host environment variable the agents get besides their own list (repeatable)",
      (value: string, list: string[] = []) => [...list, value],
    )
    .option(
      "--agent-base-url <url>",
      "where the agent sends its model calls (Claude Code's ANTHROPIC_BASE_URL, a Codex model provider, opencode's provider baseURL)",
    )
    .option(
      "--no-daemon",
      "run the agent servers in this process, not in the background service that keeps them warm between runs (also TASKLEDGER_DAEMON=off)",
    );

/** The request as words, `-` for stdin, or a file: argv caps one argument at 128 KB. */
export const withRequest = (command: Command, what: string) =>
  withRunOptions(command.argument("[request...]", `${what}; - reads it from stdin`))
    .option("--request-file <path>", "read the request from a file")
    .option("--config <file>", `project config (default: ${projectConfigName} from --cwd up)`)
    .option("--no-config", `ignore ${projectConfigName}`);

/** The options a run takes: the command line's, over the project config file's. */
export const runOptionsOf = async (raw: RawRunOptions, io: CliIo) => {
  const config =
    raw.config === false
      ? undefined
      : await loadProjectConfig(
          resolve(io.cwd, raw.cwd ?? "."),
          typeof raw.config === "string" ? raw.config : undefined,
        );
  return parseRunOptions(raw, io.cwd, config ? { path: config.path, ...config.config } : undefined);
};
