import { clipMiddle, clipStart, InvalidConfigError, oneLine } from "@taskledger/core";
import type { Checker, CheckResult } from "./checker.js";
import { type CommandRun, runCommand } from "./run-command.js";

export interface CommandCheckerOptions {
  /** Program and arguments; run without a shell in the sub-task's working directory. */
  argv: readonly string[];
  /** Default 120,000 ms. */
  timeoutMs?: number;
  /** Output bytes kept per stream, half from its start and half from its end. Default 8 KiB. */
  maxOutputBytes?: number;
  env?: NodeJS.ProcessEnv;
  name?: string;
}

export const defaultCommandTimeoutMs = 120_000;

/** Complete when the command exits 0 within its timeout. */
export function commandChecker(options: CommandCheckerOptions): Checker {
  if (options.argv.length === 0 || options.argv[0] === "") {
    throw new InvalidConfigError("A command check needs a program in argv[0]");
  }
  const timeoutMs = options.timeoutMs ?? defaultCommandTimeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidConfigError(`A command check's timeoutMs must be positive, not ${timeoutMs}`);
  }
  const shown = oneLine(options.argv.join(" "), 180);
  return {
    name: options.name ?? `command: ${shown}`,
    async check({ cwd, abortSignal, guardProcess, sandbox }): Promise<CheckResult> {
      const run = await runCommand(options.argv, {
        cwd,
        timeoutMs,
        abortSignal,
        ...(guardProcess ? { guardProcess } : {}),
        ...(sandbox ? { sandbox } : {}),
        ...(options.maxOutputBytes ? { maxOutputBytes: options.maxOutputBytes } : {}),
        ...(options.env ? { env: options.env } : {}),
      });
      return verdict(shown, timeoutMs, run);
    },
  };
}

function verdict(shown: string, timeoutMs: number, run: CommandRun): CheckResult {
  const seconds = (run.durationMs / 1000).toFixed(1);
  const output = describeOutput(run);
  if (run.spawnError) {
    return {
      complete: false,
      detail: `could not start: ${run.spawnError}`,
      feedback: `The check \`${shown}\` could not start (${run.spawnError}): the program is missing or not executable in the working directory.`,
    };
  }
  if (run.timedOut) {
    return {
      complete: false,
      detail: `timed out after ${timeoutMs} ms and was killed\n${output}`,
      feedback: `\`${shown}\` must exit 0 but did not finish within ${timeoutMs / 1000} s. Make it finish (no watch mode, no waiting on input).${tailQuote(run)}`,
    };
  }
  if (run.exitCode === 0) return { complete: true, detail: `exit 0 in ${seconds} s\n${output}` };
  const how = run.exitCode === null ? `was killed by ${run.signal}` : `exited ${run.exitCode}`;
  return {
    complete: false,
    detail: `${how} in ${seconds} s\n${output}`,
    feedback: `\`${shown}\` must exit 0 but ${how}. Fix what it reports, then run it yourself to confirm.${tailQuote(run)}`,
  };
}

// stderr first: a failing command usually says why there, and the evidence detail is cut at its end.
function describeOutput(run: CommandRun): string {
  const parts: string[] = [];
  if (run.stderr.trim()) parts.push(`stderr:\n${clipMiddle(run.stderr.trimEnd(), 1500)}`);
  if (run.stdout.trim()) parts.push(`stdout:\n${clipMiddle(run.stdout.trimEnd(), 1500)}`);
  return parts.join("\n") || "(no output)";
}

function tailQuote(run: CommandRun): string {
  const text = (run.stderr.trim() ? run.stderr : run.stdout).trimEnd();
  return text ? ` Its output ended with:\n${clipStart(text, 600)}` : "";
}
