import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { createManager, MemoryRunStore } from "@taskledger/core";
import { createFakeExecutor } from "@taskledger/testing";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTelemetry } from "./index.js";
import {
  plantedKey,
  scriptedServer,
  type TracedSetup,
  tracedExecutor,
  tracedSetup,
} from "./test-support/traced-run.js";

// One model server and one executor for the file's runs, which go one at a time: each run after
// the first finds its opencode server started (as in a host that makes several runs).
let server: Awaited<ReturnType<typeof scriptedServer>>;
let executor: ReturnType<typeof tracedExecutor>;
let setup: TracedSetup | undefined;
beforeAll(async () => {
  server = await scriptedServer();
  executor = tracedExecutor(server);
});
beforeEach(() => server.reset());
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});
afterAll(async () => {
  await executor?.close();
  await server?.close();
});

const request = "Write one.txt and then two.txt";
const num = (span: ReadableSpan, name: string) => Number(span.attributes[name] ?? 0);
const sum = (spans: ReadableSpan[], name: string) => spans.reduce((n, s) => n + num(s, name), 0);

describe("telemetry of a real run (real opencode, scripted provider)", () => {
  it("makes the GenAI span tree: workflow, planning, attempts, tools, chat calls", async () => {
    setup = await tracedSetup(server, { traced: true, executor });
    const report = await setup.telemetry.start(setup.manager, request).result;
    expect(report.status).toBe("completed");
    const spans = setup.spans();
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parentName = (s: ReadableSpan) => byId.get(s.parentSpanContext?.spanId ?? "")?.name;
    const named = (prefix: string) => spans.filter((s) => s.name.startsWith(prefix));

    const [root, ...others] = named("invoke_workflow");
    expect(others).toHaveLength(0);
    expect(root?.parentSpanContext).toBeUndefined();
    expect(root?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_workflow",
      "taskledger.run.id": report.runId,
      "taskledger.run.status": "completed",
    });
    expect(spans.every((s) => s.spanContext().traceId === root!.spanContext().traceId)).toBe(true);

    const planning = named("planning");
    expect(planning.map(parentName)).toEqual(["invoke_workflow taskledger"]);
    expect(planning[0]?.attributes["taskledger.plan.sub_tasks"]).toBe(2);

    const agents = named("invoke_agent");
    expect(agents.map((s) => [s.name, s.attributes["taskledger.attempt"]]).sort()).toEqual([
      ["invoke_agent one", 1],
      ["invoke_agent one", 2],
      ["invoke_agent two", 1],
    ]);
    for (const span of agents) {
      expect(parentName(span)).toBe("invoke_workflow taskledger");
      expect(span.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "test-model",
        "taskledger.outcome": "finished",
      });
      expect(String(span.attributes["gen_ai.conversation.id"])).toMatch(/^ses_/);
    }
    const firstTry = agents.find(
      (s) => s.name === "invoke_agent one" && num(s, "taskledger.attempt") === 1,
    )!;
    expect(firstTry.attributes).toMatchObject({
      "taskledger.verdict.completed": false,
      "taskledger.verdict.incomplete_reason": "judged-incomplete",
      "taskledger.decision": "retry",
    });
    expect(firstTry.events.map((e) => e.name)).toEqual(
      expect.arrayContaining(["taskledger.verdict", "taskledger.decision"]),
    );
    const done = agents.filter((s) => s !== firstTry);
    for (const span of done) expect(span.attributes["taskledger.decision"]).toBe("complete");

    const tools = named("execute_tool");
    expect(tools.map((s) => s.name)).toEqual([
      "execute_tool write",
      "execute_tool write",
      "execute_tool write",
    ]);
    for (const tool of tools) {
      expect(parentName(tool)).toMatch(/^invoke_agent /);
      expect(tool.attributes["gen_ai.tool.name"]).toBe("write");
      // Contents are off unless the host turns them on.
      expect(tool.attributes["gen_ai.tool.call.arguments"]).toBeUndefined();
    }

    const chats = named("chat ");
    expect(chats.every((s) => s.name === "chat manager-m")).toBe(true);
    const chatParents = chats.map(parentName);
    expect(chatParents.filter((p) => p === "planning")).toHaveLength(1);
    // Each judge call is a child of the attempt it judged.
    expect(chatParents.filter((p) => p?.startsWith("invoke_agent"))).toHaveLength(3);
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "manager-m",
      });
      expect(chat.attributes["gen_ai.input.messages"]).toBeUndefined();
    }

    // The spans' usage adds up to the report's: chat calls are the manager, attempts the agents.
    const { manager, agents: agentUsage } = report.usage;
    expect(sum(chats, "gen_ai.usage.output_tokens")).toBe(manager.outputTokens);
    expect(sum(chats, "gen_ai.usage.input_tokens")).toBe(
      manager.inputTokens + manager.cacheReadTokens + manager.cacheWriteTokens,
    );
    expect(sum(agents, "gen_ai.usage.output_tokens")).toBe(agentUsage.outputTokens);
    expect(sum(agents, "gen_ai.usage.input_tokens")).toBe(
      agentUsage.inputTokens + agentUsage.cacheReadTokens + agentUsage.cacheWriteTokens,
    );
    expect(sum(agents, "gen_ai.usage.cache_read.input_tokens")).toBe(agentUsage.cacheReadTokens);
    expect(sum(chats, "taskledger.cost.usd")).toBeCloseTo(manager.costUsd!, 9);
    expect(sum(agents, "taskledger.cost.usd")).toBeCloseTo(agentUsage.costUsd!, 9);
    expect(num(root!, "taskledger.cost.usd")).toBeCloseTo(report.usage.total.costUsd!, 9);

    // The key the model and the agents were given never reaches a span, even with contents off.
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events, s.links]))).not.toContain(
      plantedKey,
    );
  }, 120_000);

  it("records prompts, answers and tool input only when the host turns contents on", async () => {
    setup = await tracedSetup(server, { traced: true, captureContent: true, executor });
    await setup.telemetry.start(setup.manager, request).result;
    const spans = setup.spans();
    const chat = spans.find((s) => s.name.startsWith("chat "))!;
    expect(String(chat.attributes["gen_ai.input.messages"])).toContain(request);
    expect(String(chat.attributes["gen_ai.output.messages"])).toContain("subTasks");
    const tool = spans.find((s) => s.name === "execute_tool write")!;
    expect(String(tool.attributes["gen_ai.tool.call.arguments"])).toContain(".txt");
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events]))).not.toContain(plantedKey);
  }, 120_000);

  it("a resumed run continues the first session's trace and links to it", async () => {
    const store = new MemoryRunStore();
    setup = await tracedSetup(server, { traced: true, store, executor });
    const controller = new AbortController();
    const first = setup.telemetry.start(setup.manager, request, { abortSignal: controller.signal });
    first.on("sub-task-completed", () => controller.abort());
    await first.result;
    const history = await store.read(first.runId);
    const started = history[0];
    expect(started?.type === "run-started" && started.trace?.traceId).toMatch(/^[0-9a-f]{32}$/);
    const resumed = await setup.telemetry.resume(setup.manager, first.runId, { history }).result;
    expect(resumed.status).toBe("completed");
    const roots = setup.spans().filter((s) => s.name === "invoke_workflow taskledger");
    expect(roots).toHaveLength(2);
    const [one, two] = roots as [ReadableSpan, ReadableSpan];
    expect(two.spanContext().traceId).toBe(one.spanContext().traceId);
    expect(two.parentSpanContext?.spanId).toBe(one.spanContext().spanId);
    expect(two.links.map((l) => l.context.spanId)).toEqual([one.spanContext().spanId]);
    expect(two.attributes["taskledger.resumed"]).toBe(true);
    // The plan was made in the first session: the second has no planning span of its own.
    const planning = setup.spans().filter((s) => s.name === "planning");
    expect(planning.map((s) => s.parentSpanContext?.spanId)).toEqual([one.spanContext().spanId]);
    const log = await store.read(first.runId);
    const resumedRecord = log.find((e) => e.type === "run-resumed");
    expect(resumedRecord?.type === "run-resumed" && resumedRecord.trace?.spanId).toBe(
      two.spanContext().spanId,
    );
  }, 120_000);
});

describe("telemetry without a registered provider", () => {
  it("records nothing: the run goes on untraced and logs no trace context", async () => {
    const telemetry = createTelemetry();
    const store = new MemoryRunStore();
    const manager = createManager({
      cwd: process.cwd(),
      executor: createFakeExecutor({ fallback: { type: "success", text: "done" } }),
      store,
    });
    const run = telemetry.start(manager, "Do the one thing");
    expect((await run.result).status).toBe("completed");
    const [started] = await store.read(run.runId);
    expect(started?.type === "run-started" && started.trace).toBeUndefined();
  });
});
