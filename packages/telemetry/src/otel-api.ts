import { createRequire } from "node:module";

/** The parts of `@opentelemetry/api` this package uses. */
export type OtelApi = typeof import("@opentelemetry/api");

let loaded: OtelApi | null | undefined;

/**
 * `@opentelemetry/api`, the optional peer dependency, or `undefined` when it is not installed:
 * then nothing is traced. Required, not imported, so its absence is not an import error; the API
 * keeps its registered provider on `globalThis`, so this copy sees the host's.
 */
export function otelApi(): OtelApi | undefined {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded ?? undefined;
}
