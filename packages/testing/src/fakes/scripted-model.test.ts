import {
  acceptanceSchema,
  acceptanceSchemaName,
  StructuredOutputError,
  UnexpectedCallError,
} from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createScriptedModel } from "./scripted-model.js";

const output = { name: "thing", schema: z.object({ n: z.number() }) };

describe("ScriptedModel", () => {
  it("answers from its queue, validates structured answers and records calls", async () => {
    const model = createScriptedModel({ responses: [{ object: { n: 1 } }, { text: "plain" }] });
    const first = await model.generate({ messages: [{ role: "user", content: "q1" }], output });
    expect(first.object).toEqual({ n: 1 });
    expect(first.text).toBe('{"n":1}');
    const second = await model.generate({ messages: [{ role: "user", content: "q2" }] });
    expect(second).toMatchObject({ text: "plain", object: undefined, finishReason: "stop" });
    expect(model.calls.map((c) => c.messages[0]?.content)).toEqual(["q1", "q2"]);
  });

  it("throws on a call it has no answer for instead of returning undefined", async () => {
    const model = createScriptedModel();
    await expect(model.generate({ messages: [], output })).rejects.toSatisfy(
      (e) => UnexpectedCallError.isInstance(e) && (e as Error).message.includes('"thing"'),
    );
  });

  it("rejects an answer that does not match the schema, as a real provider client would", async () => {
    const model = createScriptedModel({ responses: [{ object: { n: "one" } }] });
    await expect(model.generate({ messages: [], output })).rejects.toSatisfy(
      StructuredOutputError.isInstance,
    );
  });

  it("throws scripted errors, answers from functions and honours abort", async () => {
    const boom = new Error("boom");
    const model = createScriptedModel({
      responses: [
        { error: boom },
        (req) => ({ text: `echo ${req.messages.length}` }),
        { text: "late", delayMs: 10_000 },
      ],
    });
    await expect(model.generate({ messages: [] })).rejects.toBe(boom);
    expect((await model.generate({ messages: [{ role: "user", content: "x" }] })).text).toBe(
      "echo 1",
    );
    const controller = new AbortController();
    const pending = model.generate({ messages: [], abortSignal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: "aborted" });
  });

  it("answers the acceptance judge from its own queue, satisfied when it is empty, and records it", async () => {
    const acceptance = { name: acceptanceSchemaName, schema: acceptanceSchema };
    const gap = { what: "the README section", why: "the request asks for it" };
    const model = createScriptedModel({
      responses: [{ object: { n: 1 } }, { object: { n: 2 } }],
      acceptance: [{ object: { satisfied: false, missing: [gap] }, usage: { inputTokens: 7 } }],
    });
    const ask = (content: string) =>
      model.generate({ messages: [{ role: "user", content }], output: acceptance });
    // The ordinary queue is untouched by the acceptance call between its answers.
    expect((await model.generate({ messages: [], output })).object).toEqual({ n: 1 });
    const first = await ask("judge 1");
    expect(first.object).toEqual({ satisfied: false, missing: [gap] });
    expect(first.usage.inputTokens).toBe(7);
    expect(model.acceptanceRemaining).toBe(0);
    expect((await ask("judge 2")).object).toEqual({ satisfied: true, missing: [] });
    model.pushAcceptance({ object: { satisfied: false, missing: [{ what: "x", why: "" }] } });
    expect((await ask("judge 3")).object).toMatchObject({ satisfied: false });
    expect((await model.generate({ messages: [], output })).object).toEqual({ n: 2 });
    expect(model.remaining).toBe(0);
    expect(model.calls.map((c) => c.output?.name)).toEqual([
      "thing",
      acceptanceSchemaName,
      acceptanceSchemaName,
      acceptanceSchemaName,
      "thing",
    ]);
    expect(model.calls[2]?.messages[0]?.content).toBe("judge 2");
  });
});
