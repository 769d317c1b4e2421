import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const packagesDir = join(import.meta.dirname, "..", "..");
/** A folder's own modules, in its nested folders too (not `test-support/`), relative to it. */
const sourcesIn = (dir: string) =>
  readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((f) => f.split("\\").join("/"))
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
    .filter((f) => !f.split("/").includes("test-support"));
const importsOf = (dir: string, file: string) =>
  [...readFileSync(join(dir, file), "utf8").matchAll(/from "(\.\.?\/[\w./-]+)\.js"/g)].map(
    (m) =>
      `${relative(dir, join(dir, dirname(file), m[1]!))
        .split("\\")
        .join("/")}.ts`,
  );

/** Every cycle among a folder's own modules, as "a.ts → b.ts → a.ts". */
function cyclesIn(dir: string): string[] {
  const sources = sourcesIn(dir);
  const graph = new Map(sources.map((f) => [f, importsOf(dir, f)]));
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
  return cycles;
}

describe("the packages' own sources", () => {
  it.each(readdirSync(packagesDir))("%s has no import cycle", (name) => {
    expect(cyclesIn(join(packagesDir, name, "src"))).toEqual([]);
  });

  it("core imports no vendor SDK", () => {
    const dir = import.meta.dirname;
    const vendors = sourcesIn(dir).filter((f) =>
      /from "(@anthropic-ai|openai|@google|@opencode-ai|@opentelemetry|@pydantic)/.test(
        readFileSync(join(dir, f), "utf8"),
      ),
    );
    expect(vendors).toEqual([]);
  });

  it("core starts no process (that is @taskledger/process's)", () => {
    const dir = import.meta.dirname;
    const spawning = sourcesIn(dir).filter((f) =>
      /from "node:child_process"/.test(readFileSync(join(dir, f), "utf8")),
    );
    expect(spawning).toEqual([]);
  });
});
