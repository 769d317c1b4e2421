// Helpers the telemetry tests and the bench share: a real run (real opencode, scripted provider)
// with an in-memory span exporter. Not part of the package: tsconfig.build.json leaves it out.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { createManager, type Executor, type Manager, type RunStore } from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { createOpencodeServerExecutor } from "@taskledger/executor";
import { createModel, createPricing } from "@taskledger/llm";
import {
  afterToolResult,
  createModelServer,
  type ModelServer,
  roleOf,
  scriptedOpencodeProvider,
  subTaskOf,
} from "@taskledger/testing";
import { createTelemetry, type Telemetry } from "../index.js";

/** A key the tests plant to check that it never reaches a span. */
export const plantedKey = "sk-planted-telemetry-key-4711";

export const plan = {
  subTasks: [
    {
      id: "one",
      title: "Write one.txt",
      description: "Write one.txt",
      successCriteria: ["one.txt exists"],
      dependsOn: [],
    },
    {
      id: "two",
      title: "Write two.txt",
      description: "Write two.txt",
      successCriteria: ["two.txt exists"],
      dependsOn: ["one"],
    },
  ],
};

/**
 * Sub-task `one` is judged incomplete once, so it has two attempts; `two` has one. `reset` starts
 * the script over for the next run, so one server (and the agents on it) serves a file's runs.
 */
export async function scriptedServer(): Promise<ModelServer & { reset(): void }> {
  let judged = 0;
  const server = await createModelServer({
    replies: (request) => {
      const role = roleOf(request);
      if (role === "plan")
        return { text: JSON.stringify(plan), usage: { inputTokens: 900, outputTokens: 150 } };
      if (role === "judge") {
        judged++;
        const completed = judged !== 1;
        return {
          text: JSON.stringify({
            completed,
            summary: completed ? "done" : "not yet",
            outputData: completed ? "done" : "",
            feedback: completed ? "" : "Write the file again.",
          }),
          usage: { inputTokens: 400, outputTokens: 40 },
        };
      }
      const id = subTaskOf(request) ?? "x";
      if (afterToolResult(request))
        return { text: `Wrote ${id}.txt.`, usage: { inputTokens: 2000, outputTokens: 20 } };
      return {
        toolCalls: [{ name: "write", arguments: { filePath: `${id}.txt`, content: id } }],
        usage: { inputTokens: 1500, outputTokens: 30, cacheReadTokens: 500 },
      };
    },
  });
  return Object.assign(server, {
    reset: () => {
      judged = 0;
    },
  });
}

const pricing = createPricing({
  prices: {
    "openai/manager-m": { inputPerMillion: 5, outputPerMillion: 25 },
    "scripted/test-model": { inputPerMillion: 1, outputPerMillion: 4, cacheReadPerMillion: 0.1 },
  },
});

/**
 * The executor a run gets by default, on `server`: opencode servers kept up between attempts. One
 * may serve several runs (each starts none of its own); its caller closes it.
 */
export function tracedExecutor(server: ModelServer) {
  return createOpencodeServerExecutor({
    model: "scripted/test-model",
    config: { provider: scriptedOpencodeProvider(server) },
    env: { OPENAI_API_KEY: plantedKey },
    pricing,
  });
}

export interface TracedSetup {
  provider: TracerProvider;
  exporter: InMemorySpanExporter;
  telemetry: Telemetry;
  manager: Manager;
  cwd: string;
  spans(): ReadableSpan[];
  close(): Promise<void>;
}

/**
 * A manager on the scripted server (manager and judge through the OpenAI SDK with a planted key,
 * agents through real opencode), traced into an in-memory exporter when `traced`.
 */
export async function tracedSetup(
  server: ModelServer,
  options: {
    traced: boolean;
    captureContent?: boolean;
    store?: RunStore;
    cwd?: string;
    /** The agents' executor, left open by `close` (else one of its own, closed there). */
    executor?: Executor;
  },
): Promise<TracedSetup> {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const telemetry = options.traced
    ? createTelemetry({ tracerProvider: provider, captureContent: options.captureContent ?? false })
    : createTelemetry({ tracerProvider: trace.getTracerProvider() });
  const model = telemetry.model(
    createModel({
      provider: "openai",
      model: "manager-m",
      apiKey: plantedKey,
      baseURL: server.openaiBaseURL,
      pricing,
    }),
  );
  const cwd = options.cwd ?? (await mkdtemp(join(tmpdir(), "taskledger-telemetry-")));
  const executor = options.executor ?? tracedExecutor(server);
  const manager = createManager({
    model,
    evaluator: telemetry.evaluator(createEvaluator({ model })),
    executor,
    concurrency: 1,
    maxRetries: 1,
    cwd,
    ...(options.store ? { store: options.store } : {}),
  });
  return {
    provider,
    exporter,
    telemetry,
    manager,
    cwd,
    spans: () => exporter.getFinishedSpans(),
    async close() {
      if (options.executor === undefined) await executor.close?.();
      await provider.shutdown();
      contextManager.disable();
      context.disable();
      if (!options.cwd) await rm(cwd, { recursive: true, force: true });
    },
  };
}
