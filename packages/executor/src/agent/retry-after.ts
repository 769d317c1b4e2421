/** Longest wait a provider's header is believed for (a day): past it, the value is noise. */
const maxRetryAfterMs = 24 * 60 * 60_000;

/**
 * How long a provider asked to wait, from its response headers: `retry-after-ms` (OpenAI's and
 * Anthropic's, in milliseconds) first, else `retry-after` (seconds, or an HTTP date). Undefined
 * when neither is there or readable.
 */
export function retryAfterMsOf(
  headers: Record<string, unknown>,
  now: number = Date.now(),
): number | undefined {
  const header = (name: string): string | undefined => {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : headers[key];
    return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  };
  const ms = header("retry-after-ms");
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return bounded(Number(ms));
  const after = header("retry-after");
  if (after === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return bounded(Number(after) * 1000);
  const at = Date.parse(after);
  return Number.isNaN(at) ? undefined : bounded(Math.max(0, at - now));
}

function bounded(ms: number): number | undefined {
  return Number.isFinite(ms) && ms >= 0 && ms <= maxRetryAfterMs ? Math.round(ms) : undefined;
}
