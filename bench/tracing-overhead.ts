import { fileURLToPath } from "node:url";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import {
  type AttemptResult,
  createManager,
  type Executor,
  emptyUsage,
  type LanguageModel,
  type SubTaskInput,
} from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { createTelemetry, type Telemetry } from "@taskledger/telemetry";
import { tempDirectory } from "@taskledger/testing";

// The runs work in an empty directory of their own, never in this repository.
// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-");

// A typical attempt: 10 model steps with a tool call each (the demo's attempts take 2–6).
const stepsPerAttempt = 10;
const usage = { ...emptyUsage(), inputTokens: 2000, outputTokens: 100, costUsd: 0.003 };

/** An instant agent that reports what opencode reports: a tool call and a finished step, ten times. */
const executor: Executor = {
  async run(_prompt, { onEvent }) {
    for (let i = 0; i < stepsPerAttempt; i++) {
      onEvent?.({ type: "step-start" });
      onEvent?.({ type: "tool-use", tool: "edit", status: "completed", input: "{}", output: "ok" });
      onEvent?.({ type: "step-finish", reason: "tool-calls", usage });
    }
    const result: AttemptResult = {
      outcome: "finished",
      finalText: "done",
      toolCalls: [],
      stepFinishReasons: Array(stepsPerAttempt).fill("tool-calls"),
      filesChanged: [],
      usage: { ...usage, inputTokens: usage.inputTokens * stepsPerAttempt },
      durationMs: 0,
      details: { executor: "bench", model: "bench/agent", sessionId: "ses_bench" },
    };
    return result;
  },
};

/** An instant judge model that always says complete. */
const judge: LanguageModel = {
  provider: "bench",
  modelId: "judge",
  async generate() {
    const text = JSON.stringify({ completed: true, summary: "ok", outputData: "ok", feedback: "" });
    return { text, object: JSON.parse(text), usage, finishReason: "stop" };
  },
};

const discard: SpanExporter = {
  export(_spans: ReadableSpan[], done) {
    done({ code: 0 });
  },
  async shutdown() {},
};

function plan(n: number): SubTaskInput[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    title: `Step ${i}`,
    description: `Do step ${i}.`,
    successCriteria: ["done"],
    dependsOn: [],
  }));
}

async function timeRuns(telemetry: Telemetry | undefined, subTasks: number): Promise<number> {
  const model = telemetry ? telemetry.model(judge) : judge;
  const evaluator = createEvaluator({ model });
  const manager = createManager({
    cwd: benchDir,
    model,
    executor,
    evaluator: telemetry ? telemetry.evaluator(evaluator) : evaluator,
    concurrency: 8,
    maxSubTasks: subTasks,
  });
  const options = { plan: { subTasks: plan(subTasks) } };
  const started = performance.now();
  const run = telemetry
    ? telemetry.start(manager, "bench", options)
    : manager.start("bench", options);
  const report = await run.result;
  if (report.status !== "completed") throw new Error(`bench run ${report.status}`);
  return (performance.now() - started) / subTasks;
}

export interface TracingOverheadRow {
  mode: string;
  /** The manager's own time per attempt (the agent and the judge answer at once). */
  usPerAttempt: number;
  /** Added over untraced, per attempt. */
  addedUsPerAttempt: number;
  ratio: number;
  spansPerAttempt: number;
}

/** Median µs per attempt of each mode over interleaved rounds, and its ratio to untraced. */
export async function benchTracingOverhead(
  subTasks = 300,
  rounds = 15,
): Promise<TracingOverheadRow[]> {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  let spans = 0;
  const counting: SpanExporter = {
    export(batch, done) {
      spans += batch.length;
      discard.export(batch, done);
    },
    shutdown: async () => {},
  };
  const provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter: counting, maxQueueSize: 100_000 })],
  });
  const modes: [string, () => Telemetry | undefined][] = [
    ["untraced", () => undefined],
    // The same as the first: how far two identical modes differ on this machine, as a noise gauge.
    ["untraced (again)", () => undefined],
    ["telemetry, no provider registered", () => createTelemetry()],
    ["telemetry, SDK provider recording", () => createTelemetry({ tracerProvider: provider })],
  ];
  const times = new Map<string, number[]>(modes.map(([name]) => [name, []]));
  await timeRuns(undefined, subTasks); // warm-up
  for (let round = 0; round < rounds; round++) {
    // The order turns each round, so warming and garbage collection fall on every mode alike.
    for (let i = 0; i < modes.length; i++) {
      const [name, make] = modes[(round + i) % modes.length]!;
      times.get(name)!.push(await timeRuns(make(), subTasks));
    }
  }
  await provider.forceFlush();
  await provider.shutdown();
  contextManager.disable();
  context.disable();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(times.get("untraced")!) * 1000;
  return modes.map(([mode]) => {
    const us = median(times.get(mode)!) * 1000;
    return {
      mode,
      usPerAttempt: us,
      addedUsPerAttempt: us - base,
      ratio: us / base,
      spansPerAttempt: mode.includes("recording") ? spans / (subTasks * rounds) : 0,
    };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await benchTracingOverhead()) {
    console.log(
      `${r.mode}: ${r.usPerAttempt.toFixed(0)} µs per attempt, ${r.ratio.toFixed(2)}× untraced, ${r.spansPerAttempt.toFixed(1)} spans per attempt`,
    );
  }
}
