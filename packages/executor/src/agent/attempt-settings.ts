import { describeGiven, InvalidConfigError } from "@taskledger/core";
import { defaultEventParseLimits, type EventParseLimits } from "../events/agent-events.js";
import { checkPassEnv } from "./agent-environment.js";
import { defaultTranscriptLimits, type TranscriptLimits } from "./transcript.js";

/**
 * What every agent executor (opencode's CLI and server executors, Claude Code's, Codex's) takes
 * to bound an attempt.
 */
export interface AttemptLimitOptions {
  agent?: string;
  timeoutMs?: number;
  maxSteps?: number;
  maxUnknownFinishes?: number;
  killGraceMs?: number;
  limits?: Partial<TranscriptLimits & EventParseLimits & { maxStderrChars: number }>;
}

export type AttemptSettings = ReturnType<typeof attemptSettings>;

/** An executor's options with every default filled in. */
export function attemptSettings(options: AttemptLimitOptions) {
  const limits = options.limits ?? {};
  return {
    agent: options.agent ?? "build",
    timeoutMs: options.timeoutMs ?? 20 * 60_000,
    maxSteps: options.maxSteps ?? 50,
    maxUnknownFinishes: options.maxUnknownFinishes ?? 3,
    killGraceMs: options.killGraceMs ?? 2000,
    treePollMs: 500,
    maxStderrChars: limits.maxStderrChars ?? 16_000,
    transcriptLimits: { ...defaultTranscriptLimits, ...pick(limits, defaultTranscriptLimits) },
    parseLimits: { ...defaultEventParseLimits, ...pick(limits, defaultEventParseLimits) },
  };
}

/**
 * Throws `InvalidConfigError` for a model not in the agent's form (opencode's `provider/model`, or a
 * plain model name), a non-positive limit, a `passEnv` that names no variable or a bad `baseUrl`.
 */
export function checkExecutorOptions(
  options: AttemptLimitOptions & { model: string } & Record<string, unknown>,
  numbers: readonly string[],
  checkModelOf: (name: string, model: string) => void = checkModel,
): void {
  checkModelOf("model", options.model);
  for (const key of ["timeoutMs", "maxSteps", "maxUnknownFinishes", "killGraceMs", ...numbers]) {
    const value = options[key];
    if (
      value !== undefined &&
      !(typeof value === "number" && Number.isFinite(value) && value > 0)
    ) {
      throw new InvalidConfigError(`${key} must be a positive number, got ${describeGiven(value)}`);
    }
  }
  checkPassEnv(options.passEnv);
  checkBaseUrl(options.baseUrl);
}

/** The agent's endpoint: an http(s) URL. */
function checkBaseUrl(value: unknown): void {
  if (value === undefined) return;
  const url = typeof value === "string" && URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    throw new InvalidConfigError(`baseUrl must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
}

/** `provider/model`, as opencode takes it. */
export function checkModel(name: string, model: string): void {
  if (!/^[^/\s]+\/\S+$/.test(model)) {
    throw new InvalidConfigError(`${name} must be "provider/model", got "${model}"`);
  }
}

/** A model name as Claude Code's `--model` and Codex's `-m` take it: one word, no spaces. */
export function checkModelName(name: string, model: string): void {
  if (!/^\S+$/.test(model)) {
    throw new InvalidConfigError(`${name} must be a model name without spaces, got "${model}"`);
  }
}

function pick<T extends object>(source: Record<string, unknown>, keysOf: T): Partial<T> {
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(keysOf)) if (source[key] !== undefined) picked[key] = source[key];
  return picked as Partial<T>;
}
