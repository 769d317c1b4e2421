import type { SetupOptions, SlotLimits } from "@taskledger/git-workspace";
import { UsageError } from "./usage-error.js";

/** The command line's environment flags (a part of the run's raw options). */
interface EnvironmentFlags {
  setup?: string;
  include?: string[];
  dependencies?: boolean;
  keepSlots?: boolean;
}

/** The config file's environment keys (a part of what the project config gives a run). */
export interface EnvironmentDefaults {
  setup?: string | { command: string; inputs?: string[]; timeoutSeconds?: number };
  include?: string[];
  dependencies?: boolean;
  slots?: false | { max?: number; maxSizeGB?: number; maxAgeDays?: number };
}

/** What each worktree gets of the project's environment: the command line over the config file. */
export function environmentOf(raw: EnvironmentFlags, project: EnvironmentDefaults | undefined) {
  const fromConfig = project?.setup;
  const setup: SetupOptions | undefined =
    raw.setup !== undefined
      ? { command: nonEmpty("--setup", raw.setup) }
      : typeof fromConfig === "string"
        ? { command: fromConfig }
        : fromConfig
          ? {
              command: fromConfig.command,
              ...(fromConfig.inputs ? { inputs: fromConfig.inputs } : {}),
              ...(fromConfig.timeoutSeconds
                ? { timeoutMs: Math.round(fromConfig.timeoutSeconds * 1000) }
                : {}),
            }
          : undefined;
  return {
    // Only `--no-dependencies` can be given: commander's true means "not given".
    dependencies: raw.dependencies === false ? false : (project?.dependencies ?? true),
    include: [
      ...(project?.include ?? []),
      ...(raw.include ?? []).map((p) => nonEmpty("--include", p)),
    ],
    setup,
    slots: raw.keepSlots === false ? false : slotLimitsOf(project?.slots),
  };
}

function slotLimitsOf(given: EnvironmentDefaults["slots"]): false | Partial<SlotLimits> {
  if (given === false || given === undefined) return given ?? {};
  const day = 24 * 60 * 60 * 1000;
  return {
    ...(given.max !== undefined ? { maxSlots: given.max } : {}),
    ...(given.maxSizeGB !== undefined ? { maxBytes: Math.round(given.maxSizeGB * 1024 ** 3) } : {}),
    ...(given.maxAgeDays !== undefined ? { maxAgeMs: Math.round(given.maxAgeDays * day) } : {}),
  };
}

function nonEmpty(flag: string, value: string): string {
  if (value.trim() === "") throw new UsageError(`${flag} must not be empty`);
  return value;
}
