import { createRequire } from "node:module";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

/**
 * `--otlp URL`: registers a tracer provider that sends spans to an OTLP/HTTP collector, and the
 * context manager that carries a run's span into its model calls. Loaded only with the option.
 * Resolves with what flushes and unregisters them at the end of the command.
 */
export function startOtlpTracing(url: string): () => Promise<void> {
  const { version } = createRequire(import.meta.url)("../package.json") as { version: string };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "taskledger", "service.version": version }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  return async () => {
    try {
      // Bounded: a collector that does not answer cannot hold the command open.
      await Promise.race([
        provider.shutdown(),
        new Promise((resolve) => setTimeout(resolve, 10_000).unref()),
      ]);
    } finally {
      trace.disable();
      context.disable();
    }
  };
}
