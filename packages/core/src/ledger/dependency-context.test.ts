import { describe, expect, it } from "vitest";
import { estimateTokens } from "../text/tokens.js";
import { buildDependencyContext, type CompletedOutput } from "./dependency-context.js";
import type { SubTask } from "./sub-task.js";

const task = (id: string, dependsOn: string[] = []): SubTask => ({
  id,
  title: id.toUpperCase(),
  description: id,
  successCriteria: ["done"],
  dependsOn,
  checks: [],
});

// root -> mid -> leaf, and side -> leaf; leaf is the one receiving context.
const tasks = [task("root"), task("mid", ["root"]), task("side"), task("leaf", ["mid", "side"])];
const byId = new Map(tasks.map((t) => [t.id, t]));
const outputs = (texts: Record<string, string>, order: string[]) =>
  new Map<string, CompletedOutput>(
    order.map((id, index) => [
      id,
      { subTask: byId.get(id)!, outputData: texts[id] ?? "", order: index },
    ]),
  );

describe("buildDependencyContext", () => {
  it("puts direct dependencies first, newest first, then farther ancestors", () => {
    const context = buildDependencyContext(
      byId.get("leaf")!,
      byId,
      outputs({ root: "R", mid: "M", side: "S" }, ["root", "side", "mid"]),
      10_000,
    );
    expect(context.included).toEqual(["mid", "side", "root"]);
    expect(context.text.indexOf("### mid")).toBeLessThan(context.text.indexOf("### side"));
    expect(context.omitted).toEqual([]);
  });

  it("shares the budget: small outputs pass whole, large ones are cut equally", () => {
    const big = "x".repeat(40_000);
    const budget = 500;
    const context = buildDependencyContext(
      byId.get("leaf")!,
      byId,
      outputs({ root: "ROOT-IS-SMALL", mid: big, side: big }, ["root", "side", "mid"]),
      budget,
    );
    expect(estimateTokens(context.text)).toBeLessThanOrEqual(budget);
    expect(context.included).toEqual(["mid", "side", "root"]);
    expect(context.text).toContain("ROOT-IS-SMALL");
    const midSection = context.text.slice(
      context.text.indexOf("### mid"),
      context.text.indexOf("### side"),
    );
    const sideSection = context.text.slice(
      context.text.indexOf("### side"),
      context.text.indexOf("### root"),
    );
    expect(Math.abs(midSection.length - sideSection.length)).toBeLessThan(10);
    expect(context.text).toContain("characters cut to fit the budget");
  });

  it("leaves out the farthest, oldest outputs when even short sections would not fit", () => {
    const context = buildDependencyContext(
      byId.get("leaf")!,
      byId,
      outputs({ root: "R", mid: "M", side: "S" }, ["root", "side", "mid"]),
      100,
    );
    expect(context.included).toEqual(["mid", "side"]);
    expect(context.omitted).toEqual(["root"]);
    expect(context.text).toContain("(Outputs of root left out to fit the context budget.)");
  });

  it("gives nothing for a sub-task without dependencies", () => {
    const context = buildDependencyContext(byId.get("root")!, byId, outputs({}, []), 1000);
    expect(context).toEqual({ text: "", included: [], omitted: [] });
  });

  it("walks only as far as the budget can use on a long chain", () => {
    const chain = Array.from({ length: 50_000 }, (_, i) => task(`t${i}`, i ? [`t${i - 1}`] : []));
    const chainById = new Map(chain.map((t) => [t.id, t]));
    const done = new Map<string, CompletedOutput>(
      chain
        .slice(0, -1)
        .map((t, order) => [t.id, { subTask: t, outputData: `out ${t.id}`, order }]),
    );
    const context = buildDependencyContext(chain.at(-1)!, chainById, done, 400);
    expect(context.included).toEqual(Array.from({ length: 10 }, (_, i) => `t${49_998 - i}`));
    expect(context.omitted).toEqual(["t49988"]);
  });
});
