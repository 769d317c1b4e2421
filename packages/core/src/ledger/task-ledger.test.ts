import { describe, expect, it } from "vitest";
import { PlanValidationError, TaskLedgerError } from "../errors/errors.js";
import { task } from "../test-support/sub-task-fixture.js";
import { type TaskLedgerInput, validateTaskLedger } from "./task-ledger.js";

function issuesOf(input: unknown, maxSubTasks?: number) {
  try {
    validateTaskLedger(input, maxSubTasks === undefined ? {} : { maxSubTasks });
  } catch (error) {
    expect(PlanValidationError.isInstance(error)).toBe(true);
    expect(TaskLedgerError.isInstance(error)).toBe(true);
    return (error as PlanValidationError).issues;
  }
  throw new Error("expected the ledger to be rejected");
}

describe("validateTaskLedger", () => {
  it("accepts a valid graph and fills in defaults", () => {
    const ledger = validateTaskLedger({
      subTasks: [
        { id: "a", title: "A", description: "d", successCriteria: ["c"] },
        task("b", ["a"]),
      ],
    } satisfies TaskLedgerInput);
    expect(ledger.subTasks[0]).toMatchObject({ id: "a", dependsOn: [], checks: [] });
    expect(ledger.subTasks[1]?.dependsOn).toEqual(["a"]);
  });

  it("rejects an empty plan", () => {
    expect(issuesOf({ subTasks: [] })).toEqual([
      { kind: "empty-plan", message: "the plan has no sub-tasks" },
    ]);
  });

  it("rejects an unknown dependency and names the sub-task", () => {
    const issues = issuesOf({ subTasks: [task("a"), task("b", ["ghost"])] });
    expect(issues).toEqual([
      expect.objectContaining({ kind: "unknown-dependency", subTaskId: "b" }),
    ]);
    expect(issues[0]?.message).toContain('"ghost"');
  });

  it("rejects duplicate ids", () => {
    expect(issuesOf({ subTasks: [task("a"), task("a")] })).toEqual([
      expect.objectContaining({ kind: "duplicate-id", subTaskId: "a" }),
    ]);
  });

  it("rejects a self dependency", () => {
    expect(issuesOf({ subTasks: [task("a", ["a"])] })).toEqual([
      expect.objectContaining({ kind: "self-dependency", subTaskId: "a" }),
    ]);
  });

  it("rejects a cycle and names its members", () => {
    const issues = issuesOf({
      subTasks: [task("a"), task("b", ["a", "d"]), task("c", ["b"]), task("d", ["c"])],
    });
    expect(issues).toHaveLength(1);
    expect(issues[0]?.kind).toBe("cycle");
    expect(issues[0]?.message).toMatch(/b -> d -> c -> b|c -> b -> d -> c|d -> c -> b -> d/);
    expect(issues[0]?.message).not.toContain("a ->");
  });

  it("rejects more sub-tasks than the limit", () => {
    const subTasks = Array.from({ length: 4 }, (_, i) => task(`t${i}`));
    expect(issuesOf({ subTasks }, 3)).toEqual([
      expect.objectContaining({ kind: "too-many-sub-tasks" }),
    ]);
    expect(validateTaskLedger({ subTasks }, { maxSubTasks: 4 }).subTasks).toHaveLength(4);
  });

  it("reports schema errors with the position of the sub-task", () => {
    const issues = issuesOf({ subTasks: [task("a"), { ...task("b"), successCriteria: [] }] });
    expect(issues[0]?.kind).toBe("schema");
    expect(issues[0]?.message).toContain("sub-task #2");
  });

  it("rejects ids that are not plain words", () => {
    expect(issuesOf({ subTasks: [task("$(rm -rf /)")] })[0]?.kind).toBe("schema");
  });

  it("reports every problem at once", () => {
    const kinds = issuesOf({ subTasks: [task("a", ["a"]), task("a"), task("b", ["x"])] }).map(
      (issue) => issue.kind,
    );
    expect(kinds).toEqual(["duplicate-id", "self-dependency", "unknown-dependency"]);
  });

  it("handles a long chain without recursion limits", () => {
    const subTasks = Array.from({ length: 20_000 }, (_, i) =>
      task(`t${i}`, i ? [`t${i - 1}`] : []),
    );
    subTasks[0] = task("t0", ["t19999"]);
    expect(issuesOf({ subTasks }, 20_000)[0]?.kind).toBe("cycle");
  });
});
