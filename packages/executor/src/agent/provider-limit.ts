import { oneLine, type ProviderLimit } from "@taskledger/core";
import { redactKeys } from "./redact-keys.js";

/** What an agent reported about the provider error its attempt ended on. */
export interface ProviderErrorReport {
  message: string;
  statusCode?: number | undefined;
  /** The provider's own error type or code (`insufficient_quota`, `overloaded_error`), when passed on. */
  errorType?: string | undefined;
  /** The provider's `Retry-After`, when the agent passed its headers on (opencode does). */
  retryAfterMs?: number | undefined;
}

/** The most of the provider's words a limit carries. */
export const maxLimitMessageChars = 500;

// What each agent prints, measured against the scripted server (docs/executor.md): opencode
// passes the provider's status, body and headers; Claude Code its status and error type; Codex
// only its own sentence ("exceeded retry limit, last status: 429 …", "Quota exceeded. …").
const quotaTypes =
  /^(insufficient_quota|billing_error|usage_limit_reached|usage_not_included|workspace_(owner|member)_(credits_depleted|usage_limit_reached))$/i;
// Not a bare "billing": OpenAI's plain rate-limit message links to its billing page.
const quotaWords =
  /insufficient[_ ]quota|exceeded your current quota|quota exceeded|credit balance is too low|billing (details|error|issue)|billing_error|usage limit|hit your (usage )?limit|out of credits|credits? (are )?depleted/i;
const overloadTypes = /^(overloaded_error|overloaded|server_overloaded)$/i;
const overloadWords = /\boverloaded\b|\bat capacity\b|server overload/i;
const rateTypes = /^(rate_limit_error|rate_limit_exceeded|rate_limit|too_many_requests)$/i;
const rateWords = /rate[ _-]?limit|too many requests|last status: 429\b/i;
// Claude Code's subscription limit names the epoch second it resets at.
const resetsAt = /usage limit reached\|(\d{10})\b/i;

/**
 * The provider limit an attempt ended on (429, 529, an overloaded 503, a quota or billing refusal,
 * in any agent's words), or undefined for any other error. A refused key (401, 403) is not one.
 */
export function providerLimit(
  report: ProviderErrorReport,
  provider?: string,
  now: number = Date.now(),
): ProviderLimit | undefined {
  const { statusCode: status, message } = report;
  if (status === 401 || status === 403) return undefined;
  const kind = kindOf(status, report.errorType ?? "", message);
  if (kind === undefined) return undefined;
  const limit: ProviderLimit = {
    kind,
    message: oneLine(redactKeys(message), maxLimitMessageChars) || `status ${status}`,
  };
  if (provider) limit.provider = provider;
  if (status !== undefined) limit.statusCode = status;
  const epoch = resetsAt.exec(message)?.[1];
  const retryAfterMs =
    report.retryAfterMs ??
    (epoch === undefined ? undefined : Math.max(0, Number(epoch) * 1000 - now));
  if (retryAfterMs !== undefined) limit.retryAfterMs = retryAfterMs;
  return limit;
}

/** Quota first (OpenAI's spent quota is a 429 too), then an overload, then a plain rate limit. */
function kindOf(
  status: number | undefined,
  type: string,
  message: string,
): ProviderLimit["kind"] | undefined {
  if (status === 402 || quotaTypes.test(type) || quotaWords.test(message)) return "quota";
  if (status === 529 || overloadTypes.test(type)) return "overloaded";
  if ((status === undefined || status === 503) && overloadWords.test(message)) return "overloaded";
  if (status === 429 || rateTypes.test(type)) return "rate-limit";
  if (status === undefined && rateWords.test(message)) return "rate-limit";
  return undefined;
}

const said: Record<ProviderLimit["kind"], string> = {
  "rate-limit": "is rate-limiting",
  overloaded: "is overloaded",
  quota: "refused for quota or billing",
};

/** The attempt's `error` for a limit: one readable line naming the agent, status and wait. */
export function describeProviderLimit(limit: ProviderLimit, agent: string): string {
  const facts = [
    limit.statusCode === undefined ? undefined : `status ${limit.statusCode}`,
    limit.retryAfterMs === undefined ? undefined : `retry after ${waitOf(limit.retryAfterMs)}`,
  ].filter((fact) => fact !== undefined);
  const provider = limit.provider === undefined ? "" : ` (${limit.provider})`;
  const detail = facts.length === 0 ? "" : ` (${facts.join(", ")})`;
  return `${agent}'s model provider${provider} ${said[limit.kind]}${detail}: ${limit.message}`;
}

function waitOf(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
