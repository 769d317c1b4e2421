import type { Context, Tracer, TracerProvider } from "@opentelemetry/api";
import type {
  Evaluator,
  LanguageModel,
  Manager,
  RunEvent,
  RunOptions,
  TaskRun,
  TraceRef,
} from "@taskledger/core";
import { scopeName } from "./attributes.js";
import { type OtelApi, otelApi } from "./otel-api.js";
import { RunTrace } from "./run-trace.js";
import { tracedModel } from "./traced-model.js";

/**
 * An OpenTelemetry `TracerProvider` (any version of `@opentelemetry/api` 1.x), typed by its shape
 * so this package's types compile without the optional peer installed.
 */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): object;
}

export interface TelemetryOptions {
  /** Default: the provider registered with `@opentelemetry/api` (none: nothing is recorded). */
  tracerProvider?: TracerProviderLike;
  /**
   * Record prompts, answers, tool input and output and the judge's summary on spans. Default
   * false: they can hold code and data the host may not want in its traces.
   */
  captureContent?: boolean;
}

export interface ResumeTraceOptions extends RunOptions {
  /** The run's log (`store.read(runId)`): the new session links to the sessions it recorded. */
  history?: readonly RunEvent[];
}

/** Traces runs of a `Manager` (see docs/telemetry.md for the span tree and attributes). */
export interface Telemetry {
  /** The model with a `chat {model}` span around each call; give it to the manager and the judge. */
  model(model: LanguageModel): LanguageModel;
  /** The evaluator, run inside its attempt's span so the judge's calls are its children. */
  evaluator(evaluator: Evaluator): Evaluator;
  /** `manager.start` inside a new `invoke_workflow` span that follows the run's events. */
  start(manager: Manager, request: string, options?: RunOptions): TaskRun;
  /** `manager.resume`, continuing the trace of the run's first session. */
  resume(manager: Manager, runId: string, options?: ResumeTraceOptions): TaskRun;
}

/**
 * Spans by the OpenTelemetry GenAI semantic conventions. Without `@opentelemetry/api` installed,
 * or with no tracer provider registered, every method hands back what it was given (or calls the
 * manager directly): nothing is recorded and nothing is slower.
 */
export function createTelemetry(options: TelemetryOptions = {}): Telemetry {
  const api = otelApi();
  if (!api) return untraced;
  const captureContent = options.captureContent === true;
  // Read at each run and call, not kept: a provider registered later (by another copy of the API)
  // counts, and while none is, nothing is made at all.
  const getTracer = (): Tracer | undefined =>
    registeredProvider(api, options.tracerProvider as TracerProvider | undefined)?.getTracer(
      scopeName,
    );
  const byRoot = new WeakMap<object, RunTrace>();
  const byRunId = new Map<string, RunTrace>();

  const follow = (
    runId: string | undefined,
    earlier: readonly TraceRef[],
    planned: boolean,
    launch: (trace: TraceRef | undefined) => TaskRun,
  ): TaskRun => {
    const tracer = getTracer();
    if (!tracer) return launch(undefined);
    const parent = api.context.active();
    const trace = new RunTrace(api, tracer, captureContent, runId, earlier, parent, planned);
    if (!trace.recording) {
      trace.end();
      return launch(undefined);
    }
    byRoot.set(trace.root, trace);
    const run = api.context.with(trace.rootContext, () => launch(trace.ref));
    trace.root.setAttribute("taskledger.run.id", run.runId);
    byRunId.set(run.runId, trace);
    run.on("*", (event) => trace.onEvent(event));
    run.result
      .then(
        () => trace.end(),
        (error: unknown) => {
          const code = (error as { code?: unknown })?.code;
          trace.fail(typeof code === "string" ? code : "error", String(error));
        },
      )
      .finally(() => byRunId.delete(run.runId));
    return run;
  };

  const chatParent = (active: Context): Context => {
    const span = api.trace.getSpan(active);
    const trace = span ? byRoot.get(span) : undefined;
    return trace ? trace.chatParent() : active;
  };

  return {
    model: (model) => tracedModel(api, getTracer, model, captureContent, chatParent),
    evaluator: (evaluator) => ({
      evaluate(input, evaluateOptions) {
        const context = byRunId.get(input.runId)?.attemptContext(input.subTask.id, input.attempt);
        if (!context) return evaluator.evaluate(input, evaluateOptions);
        return api.context.with(context, () => evaluator.evaluate(input, evaluateOptions));
      },
      // Not an attempt's: no span of its own, but the manager must still find it.
      ...(evaluator.runChecks ? { runChecks: evaluator.runChecks.bind(evaluator) } : {}),
    }),
    start: (manager, request, runOptions = {}) =>
      follow(undefined, [], false, (trace) =>
        manager.start(request, trace ? { ...runOptions, trace } : runOptions),
      ),
    resume: (manager, runId, { history = [], ...runOptions } = {}) =>
      // Without the log, a resumed run is taken as planned: no planning span that never ends.
      follow(runId, traceRefsOf(history), planned(history), (trace) =>
        manager.resume(runId, trace ? { ...runOptions, trace } : runOptions),
      ),
  };
}

/** The tracer provider to use, or `undefined` while the global one is the API's no-op. */
function registeredProvider(
  api: OtelApi,
  given: TracerProvider | undefined,
): TracerProvider | undefined {
  if (given) return given;
  const global = api.trace.getTracerProvider() as TracerProvider & {
    getDelegate?: () => TracerProvider;
  };
  const delegate = global.getDelegate?.() ?? global;
  return delegate.constructor.name === "NoopTracerProvider" ? undefined : global;
}

/** True unless the log shows a run that had not recorded its plan yet. */
function planned(history: readonly RunEvent[]): boolean {
  return history.length === 0 || history.some((event) => event.type === "plan-created");
}

/** The trace contexts earlier sessions logged, oldest first. */
export function traceRefsOf(history: readonly RunEvent[]): TraceRef[] {
  const refs: TraceRef[] = [];
  for (const event of history) {
    if ((event.type === "run-started" || event.type === "run-resumed") && isRef(event.trace))
      refs.push({ traceId: event.trace.traceId, spanId: event.trace.spanId });
  }
  return refs;
}

function isRef(value: unknown): value is TraceRef {
  const ref = value as TraceRef | undefined;
  return (
    typeof ref?.traceId === "string" &&
    /^[0-9a-f]{32}$/.test(ref.traceId) &&
    typeof ref.spanId === "string" &&
    /^[0-9a-f]{16}$/.test(ref.spanId)
  );
}

const untraced: Telemetry = {
  model: (model) => model,
  evaluator: (evaluator) => evaluator,
  start: (manager, request, options) => manager.start(request, options),
  resume: (manager, runId, { history: _history, ...options } = {}) =>
    manager.resume(runId, options),
};
