import { UsageError } from "./usage-error.js";

/** `--otlp`: an http(s) URL; a collector's base URL gets the standard traces path. */
export function otlpUrl(value: string, name = "--otlp"): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} must be an http(s) URL; got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`${name} must be an http(s) URL; got "${value}"`);
  }
  // A collector's base URL gets the standard traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces";
  return url.toString();
}

/**
 * Where spans go without `--otlp`: OpenTelemetry's own variables, the traces endpoint as it is,
 * else the base endpoint with `v1/traces` appended; none when `OTEL_SDK_DISABLED` is true.
 */
export function otlpFromEnv(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) {
    otlpUrl(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    return traces;
  }
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  otlpUrl(base, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/$/, "")}/v1/traces`;
  return url.toString();
}
