import { describe, expect, it } from "vitest";
import { globRegExp, pathsOverlap } from "./path-overlap.js";

describe("pathsOverlap", () => {
  it.each([
    [["src/a.ts"], ["src/a.ts"], true],
    [["src/a.ts"], ["./src/a.ts"], true],
    [["src/a.ts"], ["src/b.ts"], false],
    [["src"], ["src/a.ts"], true],
    [["src/"], ["src/deep/a.ts"], true],
    [["src/*.ts"], ["src/a.ts"], true],
    [["src/*.ts"], ["src/deep/a.ts"], false],
    [["src/**/*.ts"], ["src/deep/a.ts"], true],
    [["**/*.md"], ["docs/guide.md"], true],
    [["**/*.md"], ["src/a.ts"], false],
    [["src/**"], ["test/**"], false],
    [["src/**"], ["src/lib/*.ts"], true],
    [["src/{a,b}.ts"], ["src/b.ts"], true],
    [["src/{a,b}.ts"], ["src/c.ts"], false],
    [["README.md", "src/x.ts"], ["docs/**", "src/x.ts"], true],
    [[], ["src/a.ts"], false],
  ] as const)("%j and %j: %s", (a, b, expected) => {
    expect(pathsOverlap(a, b)).toBe(expected);
    expect(pathsOverlap(b, a)).toBe(expected);
  });

  it("reads a glob as git and shells do", () => {
    expect(globRegExp("src/**/x.ts").test("src/x.ts")).toBe(true);
    expect(globRegExp("src/**/x.ts").test("src/a/b/x.ts")).toBe(true);
    expect(globRegExp("a?.ts").test("ab.ts")).toBe(true);
    expect(globRegExp("a?.ts").test("a/.ts")).toBe(false);
    expect(globRegExp("[ab].ts").test("b.ts")).toBe(true);
    expect(globRegExp("file.ts").test("fileXts")).toBe(false);
  });
});
