import { progressJudgmentSchema, taskLedgerSchema } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toProviderJsonSchema } from "./json-schema.js";

const forbidden = [
  "$schema",
  "oneOf",
  "default",
  "const",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
];

/** Every schema node, depth first. */
function* nodes(node: unknown): Generator<Record<string, unknown>> {
  if (typeof node !== "object" || node === null) return;
  if (Array.isArray(node)) {
    for (const item of node) yield* nodes(item);
    return;
  }
  const record = node as Record<string, unknown>;
  yield record;
  for (const key of ["properties", "$defs"]) {
    if (record[key]) yield* nodes(Object.values(record[key] as object));
  }
  yield* nodes(record.items);
  yield* nodes(record.anyOf);
}

/** The rules OpenAI strict mode states: closed objects, every property required, a subset of keywords. */
function strictViolations(schema: Record<string, unknown>): string[] {
  const violations: string[] = [];
  for (const node of nodes(schema)) {
    for (const key of forbidden) if (key in node) violations.push(`keyword ${key}`);
    if (node.type === "object") {
      if (node.additionalProperties !== false) violations.push("open object");
      const names = Object.keys((node.properties as object) ?? {});
      const required = (node.required as string[]) ?? [];
      if (names.some((n) => !required.includes(n))) violations.push("optional property");
    }
  }
  return violations;
}

describe("toProviderJsonSchema", () => {
  it.each([
    ["task_ledger", taskLedgerSchema],
    ["progress_ledger_entry", progressJudgmentSchema],
  ])("turns core's %s schema into one OpenAI strict mode accepts", (_name, schema) => {
    const wire = toProviderJsonSchema(schema);
    expect(wire.strict).toBe(true);
    expect(wire.schema.type).toBe("object");
    expect(strictViolations(wire.schema)).toEqual([]);
  });

  it("keeps the limits it moves, in the description the model reads", () => {
    const { schema } = toProviderJsonSchema(taskLedgerSchema);
    // biome-ignore lint/suspicious/noExplicitAny: the wire schema is read loosely
    const subTask = (schema as any).properties.subTasks.items;
    expect(subTask.properties.id.description).toMatch(/maxLength 64/);
    expect(subTask.properties.id.description).toMatch(/pattern \^\[A-Za-z0-9\]/);
    expect(subTask.properties.successCriteria.description).toMatch(/minItems 1, maxItems 20/);
    // The check union: oneOf became anyOf, const became a one-value enum, null stays allowed.
    const check = subTask.properties.checks.items;
    expect(check.anyOf).toHaveLength(3);
    expect(check.anyOf[0].properties.type).toEqual({ type: "string", enum: ["command"] });
    expect(check.anyOf[0].properties.timeoutMs.anyOf[1]).toEqual({ type: "null" });
  });

  it("falls back to non-strict for optional properties and open records", () => {
    expect(toProviderJsonSchema(z.object({ a: z.string().optional() })).strict).toBe(false);
    expect(toProviderJsonSchema(z.object({ a: z.record(z.string(), z.number()) })).strict).toBe(
      false,
    );
    expect(toProviderJsonSchema(z.array(z.string())).strict).toBe(false);
    expect(toProviderJsonSchema(z.object({ a: z.string().nullable() })).strict).toBe(true);
  });
});
