import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type SpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import { cliVersion } from "./cli-version.js";

/**
 * `--otlp URL`: registers a tracer provider that sends spans to an OTLP/HTTP collector, and the
 * context manager that carries a run's span into its model calls. Loaded only with the option.
 * Resolves with what flushes and unregisters them at the end of the command.
 */
export function startOtlpTracing(
  url: string,
  warn: (message: string) => void,
): () => Promise<void> {
  const version = cliVersion();
  const otlp = new OTLPTraceExporter({ url, timeoutMillis: 5000 });
  // A refused export is said once, whenever it happens: the batch also exports during a long run,
  // where the processor would only have passed the failure to OpenTelemetry's own error handler.
  let warned = false;
  const refused = (message: string) => {
    if (warned) return;
    warned = true;
    warn(`could not send the spans to ${url}: ${message}`);
  };
  const exporter: SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        // 0 is ExportResultCode.SUCCESS (@opentelemetry/core).
        if (result.code !== 0) refused(result.error?.message ?? "the export failed");
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "taskledger", "service.version": version }),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  return async () => {
    try {
      // Bounded: a collector that does not answer cannot hold the command open.
      const gaveUp = await Promise.race([
        provider.shutdown().then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 10_000).unref()),
      ]);
      if (gaveUp) warn(`the OTLP collector at ${url} did not take the spans within 10 s`);
    } catch (error) {
      // The run is done and its report stands: a collector that is down costs only its spans.
      refused((error as Error).message);
    } finally {
      trace.disable();
      context.disable();
    }
  };
}
