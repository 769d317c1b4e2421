import { AbortedError } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { checkContext } from "../test-support/fixtures.js";
import type { Checker, CheckResult } from "./checker.js";
import { runChecker } from "./checker.js";
import { allOf, anyOf } from "./composite-checker.js";

/** A custom checker (any object with `check`) that records whether it ran. */
function fixed(name: string, result: CheckResult): Checker & { ran: number } {
  return {
    name,
    ran: 0,
    check() {
      this.ran++;
      return result;
    },
  };
}

describe("allOf", () => {
  it("stops at the first incomplete checker and returns its feedback", async () => {
    const a = fixed("a", { complete: true });
    const b = fixed("b", { complete: false, feedback: "Write the README section." });
    const c = fixed("c", { complete: true });
    const result = await allOf([a, b, c]).check(checkContext());
    expect(result.complete).toBe(false);
    expect(result.feedback).toBe("Write the README section.");
    expect(result.detail).toContain("b failed");
    expect([a.ran, b.ran, c.ran]).toEqual([1, 1, 0]);
  });

  it("is complete when every checker is, combining their notes", async () => {
    const result = await allOf([
      fixed("a", { complete: true, feedback: "12 tests pass." }),
      fixed("b", { complete: true, feedback: "README updated." }),
    ]).check(checkContext());
    expect(result.complete).toBe(true);
    expect(result.feedback).toBe("- 12 tests pass.\n- README updated.");
  });

  it("nests: all-of an any-of", async () => {
    const inner = anyOf([fixed("x", { complete: false }), fixed("y", { complete: true })]);
    const result = await allOf([inner, fixed("z", { complete: true })]).check(checkContext());
    expect(result.complete).toBe(true);
  });
});

describe("anyOf", () => {
  it("stops at the first complete checker", async () => {
    const a = fixed("a", { complete: false, feedback: "no" });
    const b = fixed("b", { complete: true, feedback: "yes" });
    const c = fixed("c", { complete: true });
    const result = await anyOf([a, b, c]).check(checkContext());
    expect(result).toMatchObject({ complete: true, feedback: "yes" });
    expect(c.ran).toBe(0);
  });

  it("combines every failing checker's feedback when none passes; no checkers is incomplete", async () => {
    const result = await anyOf([
      fixed("a", { complete: false, feedback: "Add docs/api.md." }),
      fixed("b", { complete: false, feedback: "Or add an API section to README.md." }),
    ]).check(checkContext());
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("- Add docs/api.md.\n- Or add an API section to README.md.");
    expect((await anyOf([]).check(checkContext())).complete).toBe(false);
  });
});

describe("runChecker", () => {
  it("turns a custom checker that throws into an incomplete result, not a crash", async () => {
    const broken: Checker = {
      name: "coverage",
      check() {
        throw new Error("coverage file unreadable");
      },
    };
    const result = await runChecker(broken, checkContext());
    expect(result).toMatchObject({ name: "coverage", complete: false });
    expect(result.feedback).toContain("coverage file unreadable");
    const inComposite = await allOf([broken]).check(checkContext());
    expect(inComposite.complete).toBe(false);
  });

  it("lets an abort through as AbortedError", async () => {
    const controller = new AbortController();
    const aborting: Checker = {
      async check() {
        controller.abort();
        throw new DOMException("aborted", "AbortError");
      },
    };
    const error = await runChecker(
      aborting,
      checkContext({ abortSignal: controller.signal }),
    ).catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
  });
});
