import { createFakeExecutor, createScriptedModel } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { InvalidConfigError, InvalidRequestError, ModelError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import type { AttemptResult, Executor } from "../ports/executor.js";
import { createManager } from "../run/manager.js";
import type { ManagerOptions } from "../run/manager-options.js";
import { MemoryRunStore } from "../store/run-store.js";
import { finishedResult } from "../test-support/memory-workspaces.js";
import { task } from "../test-support/sub-task-fixture.js";

const executor = createFakeExecutor({ fallback: { type: "success" } });
const base = { cwd: process.cwd(), executor };
/** Options as a JavaScript host or a JSON file may pass them, past the types. */
const loose = (options: Record<string, unknown>) => options as unknown as ManagerOptions;

function refusal(make: () => unknown): InvalidConfigError {
  try {
    make();
  } catch (error) {
    expect(InvalidConfigError.isInstance(error), String(error)).toBe(true);
    return error as InvalidConfigError;
  }
  throw new Error("not refused");
}

describe("host-supplied parts are checked at createManager, naming the field", () => {
  it("a model without generate, before anything runs", () => {
    const store = new MemoryRunStore();
    const error = refusal(() => createManager(loose({ ...base, store, model: {} })));
    expect(error.message).toBe("`model.generate` must be a function; got undefined.");
    expect(
      refusal(() =>
        createManager(loose({ ...base, model: { generate: async () => ({}), modelId: "m" } })),
      ).message,
    ).toBe("`model.provider` must be a non-empty string; got undefined.");
    expect(refusal(() => createManager(loose({ ...base, evaluator: {} }))).message).toContain(
      "`evaluator.evaluate` must be a function",
    );
    expect(refusal(() => createManager(loose({ ...base, store: { read: 1 } }))).message).toBe(
      "`store.append` must be a function; got undefined.",
    );
    expect(refusal(() => createManager(loose({ ...base, reviewPlan: "yes" }))).message).toBe(
      '`reviewPlan` must be a function; got string "yes".',
    );
    expect(refusal(() => createManager(loose({ cwd: "/", executor: {} }))).message).toContain(
      "`executor` is required",
    );
  });

  it("refuses unknown option keys by name, with the one meant", () => {
    const error = refusal(() => createManager(loose({ ...base, concurency: 3 })));
    expect(error.message).toContain('unknown option "concurency" (did you mean "concurrency"?)');
    expect(
      refusal(() => createManager(loose({ ...base, budget: { maxCost: 1 } }))).message,
    ).toContain('`budget`: unknown option "maxCost" (did you mean "maxCostUsd"?)');
    expect(
      refusal(() => createManager(loose({ ...base, replan: { enable: false } }))).message,
    ).toContain('unknown option "enable" (did you mean "enabled"?)');
    const manager = createManager(base);
    const plan = { subTasks: [task("a")] };
    expect(
      refusal(() => manager.start("x", { plan, abortSignl: undefined } as never)).message,
    ).toContain('run options: unknown option "abortSignl" (did you mean "abortSignal"?)');
    expect(
      refusal(() => manager.start("x", { plan, settings: { maxRetry: 1 } as never })).message,
    ).toContain('settings: unknown option "maxRetry" (did you mean "maxRetries"?)');
    expect(refusal(() => manager.resume("r", { cwdd: "/" } as never)).message).toContain(
      '"cwdd" (did you mean "cwd"?)',
    );
  });

  it("says the type of a value given as the wrong type", () => {
    expect(refusal(() => createManager(loose({ ...base, concurrency: "3" }))).message).toBe(
      '`concurrency` must be an integer from 1 to 256; got string "3".',
    );
    expect(
      refusal(() => createManager(loose({ ...base, budget: { maxCostUsd: "2" } }))).message,
    ).toContain('got string "2"');
    const manager = createManager(base);
    for (const [request, given] of [
      [42, "number 42"],
      [undefined, "undefined"],
      [{ text: "x" }, "an object"],
    ] as const) {
      expect(() => manager.start(request as never)).toThrow(
        expect.objectContaining({
          code: "invalid-request",
          message: `The request must be a string; got ${given}.`,
        }),
      );
    }
    expect(() => manager.start("  ")).toThrow(InvalidRequestError);
  });
});

describe("host-supplied parts are checked where they answer", () => {
  it("a generate that throws fails the run with a ModelError (code model-error) naming the model", async () => {
    const boom = new Error("socket closed");
    const model = createScriptedModel({
      provider: "host",
      modelId: "m1",
      responses: [{ error: boom }],
    });
    const events: RunEvent[] = [];
    const run = createManager({ ...base, model, decompose: "always" }).start("Do it.", {
      onEvent: (e) => events.push(e),
    });
    const error = await run.result.catch((e: unknown) => e);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).message).toBe("host/m1: generate() threw: socket closed");
    expect((error as ModelError).cause).toBe(boom);
    expect(events.at(-1)).toMatchObject({
      type: "run-failed",
      error: { code: "model-error", message: "host/m1: generate() threw: socket closed" },
    });
  });

  it("an executor result without stepFinishReasons fails the sub-task naming the field, once", async () => {
    const calls: number[] = [];
    const malformed: Executor = {
      async run(_prompt, options) {
        calls.push(options.attempt);
        const { stepFinishReasons: _missing, ...result } = finishedResult();
        return result as AttemptResult;
      },
    };
    const report = await createManager({ cwd: process.cwd(), executor: malformed }).run("x", {
      plan: { subTasks: [task("a")] },
    });
    expect(calls).toEqual([1]);
    expect(report.status).toBe("failed");
    const [a] = report.subTasks;
    expect(a?.status).toBe("failed");
    expect(a?.reason).toContain(
      "The executor's run() resolved to a malformed attempt result: `stepFinishReasons`",
    );
    expect(a?.reason).toContain("(got undefined)");
    expect(a?.reason).toContain("[executor-error]");
  });
});
