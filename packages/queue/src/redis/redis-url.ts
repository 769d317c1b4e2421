import { InvalidConfigError } from "@taskledger/core";
import type { RedisOptions } from "ioredis";

/**
 * Connection options from a `redis://` or `rediss://` (TLS) URL: user, password and database
 * number come from the URL, so a password never needs a flag of its own.
 */
export function redisOptionsFromUrl(url: string): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidConfigError(`Not a Redis URL: ${redactRedisUrl(url)}`);
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:")
    throw new InvalidConfigError(
      `A Redis URL starts with redis:// or rediss:// (TLS), not ${parsed.protocol}`,
    );
  const db = parsed.pathname.replace(/^\//, "");
  return {
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(parsed.protocol === "rediss:" ? { tls: { servername: parsed.hostname } } : {}),
  };
}

/** The URL as it may be printed or logged: without its password. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
}
