import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = import.meta.dirname;
const sources = readdirSync(dir).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
const importsOf = (file: string) =>
  [...readFileSync(join(dir, file), "utf8").matchAll(/from "\.\/([\w-]+)\.js"/g)].map(
    (m) => `${m[1]}.ts`,
  );

describe("core's own sources", () => {
  it("import no vendor SDK and form no import cycle", () => {
    const graph = new Map(sources.map((f) => [f, importsOf(f)]));
    const state = new Map<string, "visiting" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "visiting") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" → "));
        return;
      }
      state.set(file, "visiting");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of sources) visit(file, []);
    expect(cycles).toEqual([]);
    const vendors = sources.filter((f) =>
      /from "(@anthropic-ai|openai|@google|@opencode-ai)/.test(readFileSync(join(dir, f), "utf8")),
    );
    expect(vendors).toEqual([]);
  });
});
