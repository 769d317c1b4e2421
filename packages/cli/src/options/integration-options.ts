import { type IntegrationMode, integrationModes } from "@taskledger/core";
import { UsageError } from "./usage-error.js";

/** The command line's integration gate and acceptance flags (a part of the run's raw options). */
export interface IntegrationFlags {
  /** `--integration <batch|each|end|off>`. */
  integration?: string;
  /** `--no-acceptance` sets it false; commander's default is true. */
  acceptance?: boolean;
  /** `--acceptance-rounds <n>`. */
  acceptanceRounds?: string;
}

/** The config file's `integration` and `acceptance`. */
export interface IntegrationDefaults {
  integration?: IntegrationMode;
  acceptance?: boolean | { rounds?: number };
}

/** What a run asks of the gate and the acceptance judge. */
export interface IntegrationChoice {
  /** When the merged result is checked before work lands: `batch` (default), `each`, `end`, `off`. */
  integration: IntegrationMode;
  /** The request judged as a whole at the end, with `rounds` of missing work planned; false: not. */
  acceptance: false | { rounds: number };
}

// As core's: one round of missing work by default, at most five.
const defaultRounds = 1;
const maxRounds = 5;

/** The gate and the acceptance as the command line (over the config file) asks. */
export function integrationOf(
  raw: IntegrationFlags,
  project: IntegrationDefaults | undefined,
): IntegrationChoice {
  return {
    integration: modeOf(raw.integration) ?? project?.integration ?? "batch",
    acceptance: acceptanceOf(raw, project?.acceptance),
  };
}

function modeOf(value: string | undefined): IntegrationMode | undefined {
  if (value === undefined) return undefined;
  if (integrationModes.includes(value as IntegrationMode)) return value as IntegrationMode;
  throw new UsageError(
    `--integration must be one of ${integrationModes.join(", ")}; got "${value}"`,
  );
}

function acceptanceOf(
  raw: IntegrationFlags,
  project: IntegrationDefaults["acceptance"],
): IntegrationChoice["acceptance"] {
  const rounds = roundsOf(raw.acceptanceRounds);
  if (raw.acceptance === false) {
    if (rounds !== undefined)
      throw new UsageError("--acceptance-rounds needs the acceptance: leave out --no-acceptance");
    return false;
  }
  // A flag wins over the file, even over its `false`.
  if (rounds !== undefined) return { rounds };
  if (project === false) return false;
  if (project === undefined || project === true) return { rounds: defaultRounds };
  return { rounds: project.rounds ?? defaultRounds };
}

function roundsOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = value.trim() === "" ? Number.NaN : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > maxRounds) {
    throw new UsageError(
      `--acceptance-rounds must be a whole number from 0 to ${maxRounds}; got "${value}"`,
    );
  }
  return n;
}
