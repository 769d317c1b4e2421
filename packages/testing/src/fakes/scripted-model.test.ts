import { StructuredOutputError, UnexpectedCallError } from "@taskledger/core";
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
});
