import { type BestOf, maxCandidates } from "@taskledger/core";
import { type AgentName, parseAgentModel } from "@taskledger/executor";
import { UsageError } from "./usage-error.js";

/** The command line's best-of flags (a part of the run's raw options). */
export interface BestOfFlags {
  bestOf?: string;
  /** `--best-of-all`. */
  bestOfAll?: boolean;
  /** `--no-best-of-ladder` sets it false. */
  bestOfLadder?: boolean;
  candidateModel?: string[];
  isolation?: string;
}

/** The config file's `bestOf`: a number of candidates, or the whole setting. */
export type BestOfDefaults =
  | number
  | { candidates: number; for?: "risky" | "all"; ladder?: boolean; models?: string[] };

/**
 * Parallel candidates as the command line (over the config file) asks: undefined for one attempt
 * at a time. Candidate models are named as alternate agent models are (`codex:<model>`).
 */
export function bestOfOf(
  raw: BestOfFlags,
  project: BestOfDefaults | undefined,
  agent: AgentName,
  checkModel: (flag: string, agent: AgentName, model: string) => void,
): BestOf | undefined {
  const config = typeof project === "number" ? { candidates: project } : project;
  let candidates = config?.candidates ?? 1;
  if (raw.bestOf !== undefined) {
    const n = Number(raw.bestOf);
    if (!Number.isInteger(n) || n < 1 || n > maxCandidates)
      throw new UsageError(
        `--best-of must be a whole number from 1 to ${maxCandidates}; got "${raw.bestOf}"`,
      );
    candidates = n;
  }
  const models = (raw.candidateModel ?? config?.models ?? []).map((value) => {
    let named: ReturnType<typeof parseAgentModel>;
    try {
      named = parseAgentModel(value);
    } catch (error) {
      throw new UsageError(`--candidate-model: ${(error as Error).message}`);
    }
    checkModel("--candidate-model", named.agent ?? agent, named.model);
    // Named in full, so a worker that takes the attempt runs it on the same agent.
    return named.agent || agent === "opencode" ? value : `${agent}:${value}`;
  });
  if (candidates > 1 && raw.isolation === "shared")
    throw new UsageError(
      "--best-of needs worktrees: candidates side by side in one directory would undo each other's work",
    );
  if (candidates === 1) {
    if (raw.candidateModel?.length || raw.bestOfAll)
      throw new UsageError(
        `${raw.bestOfAll ? "--best-of-all" : "--candidate-model"} needs --best-of 2 or more`,
      );
    return undefined;
  }
  if (models.length > maxCandidates)
    throw new UsageError(`--candidate-model is given at most ${maxCandidates} times`);
  return {
    candidates,
    for: raw.bestOfAll ? "all" : (config?.for ?? "risky"),
    ladder: raw.bestOfLadder === false ? false : (config?.ladder ?? true),
    models,
  };
}
