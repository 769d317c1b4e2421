import { describe, expect, it } from "vitest";
import {
  AbortedError,
  InvalidRequestError,
  isAbortError,
  ModelError,
  PlanValidationError,
  StructuredOutputError,
  TaskLedgerError,
} from "./errors.js";

describe("TaskLedgerError", () => {
  it("carries a stable code, a cause and a retryable flag", () => {
    const cause = new Error("socket hang up");
    const error = new ModelError({
      message: "boom",
      provider: "openai",
      statusCode: 503,
      isRetryable: true,
      cause,
    });
    expect(error.code).toBe("model-error");
    expect(error.cause).toBe(cause);
    expect(error.isRetryable).toBe(true);
    expect(error.statusCode).toBe(503);
    expect(error).toBeInstanceOf(Error);
  });

  it("recognises errors from another copy of the package by their marker", () => {
    // What a second copy of @taskledger/core in node_modules would construct.
    const foreign = Object.assign(new Error("x"), {
      [Symbol.for("taskledger.error")]: true,
      code: "invalid-plan",
    });
    expect(TaskLedgerError.isInstance(foreign)).toBe(true);
    expect(PlanValidationError.isInstance(foreign)).toBe(true);
    expect(ModelError.isInstance(foreign)).toBe(false);
    expect(TaskLedgerError.isInstance(new Error("plain"))).toBe(false);
    expect(TaskLedgerError.isInstance(null)).toBe(false);
  });

  it("subclass checks tell kinds apart", () => {
    const error = new InvalidRequestError("empty");
    expect(InvalidRequestError.isInstance(error)).toBe(true);
    expect(StructuredOutputError.isInstance(error)).toBe(false);
  });

  it("keeps only a bounded part of a model's invalid text", () => {
    const error = new StructuredOutputError("bad", { text: "x".repeat(100_000) });
    expect(error.text.length).toBeLessThan(4100);
  });

  it("isAbortError knows ours and the platform's", () => {
    expect(isAbortError(new AbortedError())).toBe(true);
    const controller = new AbortController();
    controller.abort();
    expect(isAbortError(controller.signal.reason)).toBe(true);
    expect(isAbortError(new Error("other"))).toBe(false);
  });
});
