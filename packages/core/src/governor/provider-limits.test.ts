import { createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { ModelError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { AttemptResult, ExecuteOptions, Executor, ProviderLimit } from "../ports/executor.js";
import { createManager } from "../run/manager.js";
import { MemoryRunStore } from "../store/run-store.js";
import { finishedResult } from "../test-support/memory-workspaces.js";
import { task } from "../test-support/sub-task-fixture.js";
import { ProviderGovernor } from "./provider-governor.js";

const four = { subTasks: [task("a"), task("b"), task("c"), task("d")] };

/**
 * An agent whose provider refuses every request until `windowMs` has passed since the first: an
 * attempt then ends `rate-limited` (after `retriesMs` of the agent's own retries), else finishes.
 * It counts what the provider refused.
 */
function limitedAgent(windowMs: number, limit: Omit<ProviderLimit, "message">, retriesMs = 30) {
  let opened: number | undefined;
  const calls: { subTaskId: string; attempt: number; agentModel?: string; at: number }[] = [];
  let refused = 0;
  let running = 0;
  let mostAtOnce = 0;
  const executor: Executor = {
    async run(_prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      try {
        return await attempt(options);
      } finally {
        running--;
      }
    },
  };
  const attempt = async (options: ExecuteOptions): Promise<AttemptResult> => {
    opened ??= Date.now() + windowMs;
    calls.push({
      subTaskId: options.subTask.id,
      attempt: options.attempt,
      ...(options.agentModel ? { agentModel: options.agentModel } : {}),
      at: Date.now(),
    });
    const limited = Date.now() < opened && options.agentModel === undefined;
    await new Promise((resolve) => setTimeout(resolve, limited ? retriesMs : 20));
    if (limited) {
      refused++;
      return {
        ...finishedResult(),
        outcome: "rate-limited",
        error: "Rate limit reached for requests (status 429)",
        limit: { ...limit, message: "Rate limit reached for requests" },
      };
    }
    options.onEvent?.({ type: "step-finish", reason: "stop" });
    return finishedResult();
  };
  return { executor, calls, refused: () => refused, mostAtOnce: () => mostAtOnce };
}

describe("a provider's rate limit is not an attempt", () => {
  it("four sub-tasks at concurrency 4 through a limit window complete with one counted attempt each, no retry, no replan, the waits in the report", async () => {
    const agent = limitedAgent(600, {
      kind: "rate-limit",
      provider: "openai",
      statusCode: 429,
      retryAfterMs: 100,
    });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      concurrency: 4,
      maxRetries: 0,
    }).run("x", { plan: four, onEvent: (e) => events.push(e) });
    expect(report.status, report.reason ?? "").toBe("completed");
    expect(report.subTasks.map((s) => s.attempts)).toEqual([1, 1, 1, 1]);
    expect(report.subTasks.every((s) => (s.rateLimited ?? 0) >= 1)).toBe(true);
    const types = new Set(events.map((e) => e.type));
    for (const never of [
      "sub-task-retrying",
      "sub-task-escalated",
      "plan-revised",
      "sub-task-failed",
    ])
      expect(types.has(never as RunEvent["type"]), never).toBe(false);
    const [provider] = report.providers ?? [];
    expect(provider).toMatchObject({ key: "agent", provider: "openai" });
    expect(provider!.rejected).toBe(agent.refused());
    expect(provider!.waits).toBeGreaterThanOrEqual(1);
    expect(provider!.waitedMs).toBeGreaterThanOrEqual(100);
    // A fan-out that does not adapt sends each lane again every Retry-After: 4 × 600 / 130 ≈ 18.
    // Governed, after the first four only one probe goes out per pause.
    expect(agent.refused()).toBeLessThanOrEqual(4 + Math.ceil(600 / 100) + 1);
    // Never more than the concurrency at once, waiting lanes included.
    const limited = events.filter((e) => e.type === "provider-limited");
    expect(limited.every((e) => e.type === "provider-limited" && e.until !== undefined)).toBe(true);
  });

  it("twice as many sub-tasks as the concurrency through a window: all complete, never more than the concurrency at once (a lent slot is taken back)", async () => {
    const agent = limitedAgent(400, { kind: "rate-limit", provider: "openai", retryAfterMs: 60 });
    const eight = { subTasks: ["a", "b", "c", "d", "e", "f", "g", "h"].map((id) => task(id)) };
    const report = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      concurrency: 4,
    }).run("x", { plan: eight });
    expect(report.status, report.reason ?? "").toBe("completed");
    expect(report.subTasks.every((s) => s.attempts === 1)).toBe(true);
    expect(agent.mostAtOnce()).toBeLessThanOrEqual(4);
  }, 20_000);

  it("a quota with no alternate agent model stops the run partial with one line naming the provider: never a loop", async () => {
    const agent = limitedAgent(60_000, { kind: "quota", provider: "openai", statusCode: 429 });
    const report = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      concurrency: 1,
    }).run("x", { plan: { subTasks: [task("a"), task("b")] } });
    expect(report.status).toBe("partial");
    expect(report.reason).toMatch(/openai says its quota is exhausted: Rate limit reached/);
    expect(agent.calls).toHaveLength(1);
    expect(report.subTasks[0]).toMatchObject({ status: "failed", failure: "provider-limit" });
    expect(report.subTasks[0]!.reason).toMatch(/openai says its quota is exhausted/);
    expect(report.providers?.[0]).toMatchObject({ rejected: 1, waits: 0 });
    expect(report.providers?.[0]?.exhausted).toBeDefined();
  });

  it("a quota moves the sub-task to the alternate agent model when one is given", async () => {
    const agent = limitedAgent(60_000, { kind: "quota", provider: "openai", statusCode: 429 });
    const events: RunEvent[] = [];
    const report = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      alternateAgentModels: ["other/model"],
    }).run("x", { plan: { subTasks: [task("a")] }, onEvent: (e) => events.push(e) });
    expect(report.status).toBe("completed");
    expect(agent.calls.map((c) => c.agentModel ?? "own")).toEqual(["own", "other/model"]);
    expect(events.find((e) => e.type === "sub-task-escalated")).toMatchObject({
      step: "alternate-model",
      agentModel: "other/model",
    });
  });

  it("a Retry-After longer than the time budget leaves is not waited for", async () => {
    const agent = limitedAgent(60_000, {
      kind: "rate-limit",
      provider: "openai",
      retryAfterMs: 3_600_000,
    });
    const report = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      budget: { maxDurationMs: 60_000 },
    }).run("x", { plan: { subTasks: [task("a")] } });
    expect(report.status).toBe("partial");
    expect(report.reason).toMatch(
      /openai asks to wait 3600 s, more than the run's time budget leaves/,
    );
    expect(agent.calls).toHaveLength(1);
  });

  it("the manager's own call a provider refuses waits for its Retry-After and is asked again", async () => {
    const model = createScriptedModel({
      responses: [
        {
          error: new ModelError({
            message: "scripted answered HTTP 429: Rate limit reached",
            provider: "scripted",
            statusCode: 429,
            retryAfterMs: 50,
          }),
        },
        { object: { subTasks: [task("a")] } },
      ],
    });
    const agent = limitedAgent(0, { kind: "rate-limit" });
    const events: RunEvent[] = [];
    const report = await createManager({ cwd: process.cwd(), model, executor: agent.executor }).run(
      "Build the parser, then write its tests and finally document it in the README.",
      { onEvent: (e) => events.push(e) },
    );
    expect(report.status, report.reason ?? "").toBe("completed");
    expect(events.find((e) => e.type === "provider-limited")).toMatchObject({
      call: "manager",
      provider: "scripted",
      limit: { kind: "rate-limit", statusCode: 429, retryAfterMs: 50 },
    });
    expect(report.providers?.[0]).toMatchObject({ rejected: 1, waits: 1 });
  });

  it("a wait a stopped run recorded holds when it is resumed", async () => {
    const store = new MemoryRunStore();
    const agent = limitedAgent(60_000, {
      kind: "rate-limit",
      provider: "openai",
      retryAfterMs: 400,
    });
    const controller = new AbortController();
    const manager = createManager({ cwd: process.cwd(), executor: agent.executor, store });
    const first = manager.run("x", {
      plan: { subTasks: [task("a")] },
      abortSignal: controller.signal,
      onEvent: (e) => {
        if (e.type === "provider-limited") setTimeout(() => controller.abort(), 10);
      },
    });
    const cancelled = await first;
    expect(cancelled.status).toBe("cancelled");
    const log = await store.read(cancelled.runId);
    const limited = log.find((e) => e.type === "provider-limited");
    expect(limited?.type === "provider-limited" && limited.until).toBeDefined();
    const until = Date.parse((limited as { until: string }).until);
    // The window is over for the next attempt: it must still wait for the recorded pause.
    const open = createManager({
      cwd: process.cwd(),
      executor: limitedAgent(0, { kind: "rate-limit" }).executor,
      store,
    });
    const started = Date.now();
    let attemptAt: number | undefined;
    const resumed = await open.resume(cancelled.runId, {
      onEvent: (e) => {
        if (e.type === "sub-task-started") attemptAt ??= Date.now();
      },
    }).result;
    expect(resumed.status).toBe("completed");
    expect(attemptAt).toBeGreaterThanOrEqual(Math.min(until, started + 300) - 5);
    expect(resumed.subTasks[0]).toMatchObject({ attempts: 1, rateLimited: 1 });
  });

  it("a kill -9 the moment a pause is logged leaves no attempt in flight: the resume counts it rate-limited, not interrupted", async () => {
    // The log as a process killed right after its `provider-limited` record leaves it.
    const store = new MemoryRunStore();
    let dead = false;
    const controller = new AbortController();
    const dying = {
      read: (runId: string) => store.read(runId),
      async append(runId: string, record: RunEvent) {
        if (dead) return;
        await store.append(runId, record);
        if (record.type !== "provider-limited") return;
        dead = true;
        controller.abort();
      },
    };
    const agent = limitedAgent(60_000, {
      kind: "rate-limit",
      provider: "openai",
      retryAfterMs: 100,
    });
    const killed = await createManager({
      cwd: process.cwd(),
      executor: agent.executor,
      store: dying,
    }).run("x", { plan: { subTasks: [task("a")] }, abortSignal: controller.signal });
    const log = await store.read(killed.runId);
    expect(log.at(-1)?.type).toBe("provider-limited");
    const resumed = await createManager({
      cwd: process.cwd(),
      executor: limitedAgent(0, { kind: "rate-limit" }).executor,
      store,
    }).resume(killed.runId).result;
    expect(resumed.status).toBe("completed");
    const after = await store.read(killed.runId);
    expect(after.find((r) => r.type === "run-resumed")).toMatchObject({ interrupted: [] });
    expect(resumed.subTasks[0]).toMatchObject({ attempts: 1, rateLimited: 1 });
  });
});

describe("ProviderGovernor", () => {
  it("pauses a limited key until its Retry-After, then lets one in, then grows with each answer; other keys go on", async () => {
    const governor = new ProviderGovernor(4, () => 0);
    const signal = new AbortController().signal;
    const pause = governor.limited("p", 80);
    expect(pause.waitMs).toBe(80);
    const other = await governor.acquire("q", signal);
    other.release();
    const started = Date.now();
    const first = await governor.acquire("p", signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    // One at a time until the first answers.
    let second = false;
    const next = governor.acquire("p", signal).then((ticket) => {
      second = true;
      return ticket;
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(second).toBe(false);
    first.answered();
    (await next).release();
    expect(second).toBe(true);
    first.release();
  });

  it("backs off exponentially with jitter when no Retry-After is given, a limit met during a pause is no new step", () => {
    const governor = new ProviderGovernor(4, () => 0.5);
    expect(governor.limited("p").waitMs).toBe(2000);
    // Met during that pause: the same step (2 s again, not 4 s).
    expect(governor.limited("p").waitMs).toBeLessThanOrEqual(2000);
    const random = [0, 1];
    const jittered = new ProviderGovernor(4, () => random.shift() ?? 0);
    expect(jittered.limited("p").waitMs).toBe(1000);
    jittered.close();
    governor.close();
  });

  it("a wait is given up on abort", async () => {
    const governor = new ProviderGovernor(4);
    governor.limited("p", 10_000);
    const controller = new AbortController();
    const waiting = governor.acquire("p", controller.signal);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: "aborted" });
    governor.close();
  });
});
