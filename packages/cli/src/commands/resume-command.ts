import { resolve } from "node:path";
import {
  FileRunStore,
  isFinal,
  RunNotFoundError,
  type RunState,
  recoverRun,
} from "@taskledger/core";
import type { Command } from "commander";
import type { CliIo } from "../cli-io.js";
import {
  otlpFromEnv,
  parseRunOptions,
  type RawRunOptions,
  type RunOptions,
  UsageError,
} from "../options/cli-options.js";
import { loggedOptions, readHostSettings } from "../options/host-settings.js";
import { withRunOptions } from "../options/run-flags.js";
import { openSession, printPlan } from "../output/terminal-session.js";
import { openRunPage, type UiFlags, withUiOptions } from "./ui-command.js";

/** Registers `taskledger resume <run-id>`: the options given here override those the run logged. */
export function addResumeCommand(program: Command, io: CliIo, exit: (code: number) => void): void {
  withUiOptions(
    withRunOptions(program.command("resume").argument("<run-id>", "the run to continue")),
  )
    .description(
      "continue a run stored with --store after a crash, a kill or Ctrl-C; it keeps the options it was started with unless given again",
    )
    .option("-y, --yes", "do not ask before running a replan")
    .action(async (runId: string, raw: RawRunOptions & UiFlags, command: Command) => {
      const given = new Set(
        loggedOptions
          .map(([key]) => key)
          .filter((key) => command.getOptionValueSource(key) === "cli"),
      );
      raw.otlp ??= otlpFromEnv(io.env);
      exit(await resumeCommand(runId, raw, given, io, raw));
    });
}

/**
 * `taskledger resume RUN --store DIR`: continues a stored run where its log ends, with the options
 * it logged at start; an option given again overrides its logged value, with a notice.
 */
export async function resumeCommand(
  runId: string,
  raw: RawRunOptions,
  given: ReadonlySet<keyof RawRunOptions>,
  io: CliIo,
  ui: UiFlags = {},
): Promise<number> {
  if (!raw.store) throw new UsageError("resume needs --store, the directory the run was stored in");
  const history = await new FileRunStore(resolve(io.cwd, raw.store)).read(runId);
  if (history.length === 0) throw new RunNotFoundError(runId);
  const recovered = recoverRun(history, runId);
  const resumed = await resumeOptions(recovered, raw, given, io.cwd);
  const { notices } = resumed;
  let { options } = resumed;
  // With --ui, the page of the resumed run, as `run --ui` serves its run's.
  const page = ui.ui ? openRunPage(options, io, ui) : undefined;
  if (page) ({ options, io } = page);
  const session = openSession(options, io, true, page?.reviewer);
  const { human, c, runtime } = session;
  for (const notice of notices) human.write(c.dim(`note: ${notice}\n`));
  try {
    await page?.listen();
    await runtime.ready(io.signal);
    const done = [...recovered.subTasks.values()].filter((s) => s.status === "completed").length;
    human.write(
      isFinal(recovered)
        ? `Run ${runId} had already finished.\n`
        : `Resuming run ${runId}: ${done} of ${recovered.subTasks.size} sub-task(s) already completed.\n`,
    );
    const planned = history.find((event) => event.type === "plan-created");
    if (planned?.type === "plan-created") printPlan(planned, human, c);
    const run = await runtime.resume(runId, {
      history,
      abortSignal: io.signal,
      ...(given.has("cwd") ? { cwd: options.cwd } : {}),
      settings: {
        ...(given.has("concurrency") ? { concurrency: options.concurrency } : {}),
        ...(given.has("maxRetries") ? { maxRetries: options.maxRetries } : {}),
        ...(given.has("maxSubTasks") ? { maxSubTasks: options.maxSubTasks } : {}),
        ...(given.has("alternateAgentModel")
          ? { alternateAgentModels: options.alternateAgentModels }
          : {}),
        ...(given.has("replan") ? { replan: { enabled: options.replan } } : {}),
        ...(["bestOf", "bestOfAll", "bestOfLadder", "candidateModel"].some((k) =>
          given.has(k as keyof RawRunOptions),
        )
          ? { bestOf: options.bestOf ?? 1 }
          : {}),
        ...(given.has("integration") ? { integration: options.integration } : {}),
        ...(given.has("acceptance") || given.has("acceptanceRounds")
          ? { acceptance: options.acceptance }
          : {}),
        ...(given.has("maxCost") && options.maxCostUsd !== undefined
          ? { budget: { maxCostUsd: options.maxCostUsd } }
          : {}),
      },
    });
    page?.attach(run);
    return await session.follow(run, history);
  } finally {
    await runtime.close();
    await page?.close();
  }
}

/** The options a resumed run runs with: those it logged, under those given again. */
export async function resumeOptions(
  recovered: RunState,
  raw: RawRunOptions,
  given: ReadonlySet<keyof RawRunOptions>,
  cwd: string,
): Promise<{ options: RunOptions; notices: string[] }> {
  const host = readHostSettings(recovered.settings?.host);
  const notices: string[] = [];
  if (!host) {
    notices.push(
      "this run's log does not hold its options (an older taskledger wrote it): using the options given now",
    );
    return { options: await parseRunOptions(raw, cwd), notices };
  }
  const logged: RawRunOptions = {
    provider: host.provider,
    model: host.model,
    ...(host.baseURL ? { baseUrl: host.baseURL } : {}),
    ...(host.agent ? { agent: host.agent } : {}),
    agentModel: host.agentModel,
    // Logs from before `--executor` ran every attempt as its own process.
    executor: host.executor ?? "cli",
    // Logs from before `--sandbox` ran unconfined.
    sandbox: host.sandbox?.mode ?? "off",
    ...(host.sandbox?.allowHosts.length ? { allowHost: host.sandbox.allowHosts } : {}),
    ...(host.sandbox?.homeReads?.length ? { homeRead: host.sandbox.homeReads } : {}),
    ...(recovered.cwd ? { cwd: recovered.cwd } : {}),
    ...(host.passEnv ? { passEnv: host.passEnv } : {}),
    ...(host.agentBaseUrl ? { agentBaseUrl: host.agentBaseUrl } : {}),
    ...(recovered.settings
      ? {
          concurrency: String(recovered.settings.concurrency),
          maxRetries: String(recovered.settings.maxRetries),
          maxSubTasks: String(recovered.settings.maxSubTasks),
          alternateAgentModel: recovered.settings.alternateAgentModels,
          replan: recovered.settings.replan.enabled,
          ...(recovered.settings.bestOf
            ? {
                bestOf: String(recovered.settings.bestOf.candidates),
                bestOfAll: recovered.settings.bestOf.for === "all",
                bestOfLadder: recovered.settings.bestOf.ladder,
                candidateModel: recovered.settings.bestOf.models,
              }
            : {}),
          // Logs from before the gate and the acceptance ran neither.
          integration: recovered.settings.integration ?? "off",
          ...(recovered.settings.acceptance
            ? { acceptanceRounds: String(recovered.settings.acceptance.rounds) }
            : { acceptance: false }),
          ...(recovered.settings.budget.maxCostUsd === undefined
            ? {}
            : { maxCost: String(recovered.settings.budget.maxCostUsd) }),
        }
      : {}),
  };
  const merged: RawRunOptions = { ...raw };
  // One of the acceptance's two flags given again replaces both logged values.
  if (given.has("acceptanceRounds") && !given.has("acceptance")) delete logged.acceptance;
  if (given.has("acceptance") && !given.has("acceptanceRounds")) delete logged.acceptanceRounds;
  for (const [key, flag] of loggedOptions) {
    if (given.has(key)) {
      notices.push(`${flag} given: it overrides what the run was started with`);
      continue;
    }
    if (key === "opencodeConfig" || key === "prices") delete merged[key];
    else if (logged[key] === undefined) delete merged[key];
    else Object.assign(merged, { [key]: logged[key] });
  }
  const options = await parseRunOptions(merged, cwd);
  if (!given.has("opencodeConfig") && host.opencodeConfig)
    options.opencodeConfig = host.opencodeConfig;
  if (!given.has("prices") && host.prices) options.prices = host.prices;
  // Slots are made again as the log says; workers are sent the logged setup command.
  const environment =
    recovered.workspace?.kind === "worktree" ? recovered.workspace.environment : undefined;
  if (environment) options.environment = { ...environment, setup: environment.setup };
  // Slots kept or not, as the run was started, unless the resume says.
  if (host.keepSlots === false && !given.has("keepSlots")) options.environment.slots = false;
  return { options, notices };
}
