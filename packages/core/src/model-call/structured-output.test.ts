import { describe, expect, it } from "vitest";
import { z } from "zod";
import { StructuredOutputError } from "../errors/errors.js";
import { parseStructuredOutput } from "./structured-output.js";

const schema = z.object({ n: z.number() });

describe("parseStructuredOutput", () => {
  it("parses plain and fenced JSON", () => {
    expect(parseStructuredOutput('{"n":1}', schema)).toEqual({ n: 1 });
    expect(parseStructuredOutput('```json\n{"n":2}\n```', schema)).toEqual({ n: 2 });
  });

  it("rejects text that is not JSON with a typed error", () => {
    expect(() => parseStructuredOutput("Sure! Here it is", schema)).toThrowError(
      expect.objectContaining({ code: "invalid-model-output" }),
    );
  });

  it("rejects JSON that misses the schema and says where", () => {
    try {
      parseStructuredOutput('{"n":"one"}', schema);
      expect.unreachable();
    } catch (error) {
      expect(StructuredOutputError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain("n:");
    }
  });
});
