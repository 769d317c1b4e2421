import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeRepo, writeFiles } from "../test-support/git-repo.js";
import { projectDigest } from "./build-project-digest.js";

const cacheDir = () => mkdtempSync(join(tmpdir(), "taskledger-digests-"));

const webApp = {
  "package.json": JSON.stringify({
    name: "web-app",
    scripts: { test: "vitest run", typecheck: "tsc --noEmit", lint: "biome check ." },
    dependencies: { express: "^5.1.0", zod: "^4.0.0" },
    devDependencies: { vitest: "^5.0.0" },
    workspaces: ["packages/*"],
  }),
  "package-lock.json": "{}",
  "AGENTS.md":
    "# Notes for agents\n\nRun `npm test` before you finish.\nNever edit generated/ by hand.\n",
  "README.md": "# Web app\n\nA small web app.\n",
  "src/slugify.ts": "export const slugify = (s: string) => s;\n",
  "src/slugify.test.ts": "import { slugify } from './slugify';\n",
  "packages/api/package.json": JSON.stringify({ name: "api", scripts: { test: "node --test" } }),
  "packages/api/src/server.ts": "export {};\n",
};

describe("the project digest", () => {
  it("holds the file names, the test script and AGENTS.md's lines, within its budget", async () => {
    const repo = makeRepo(webApp);
    const digest = await projectDigest(repo, { cacheDir: cacheDir() });
    expect(digest.text).toContain("src/slugify.ts");
    expect(digest.text).toContain("packages/api/src/server.ts");
    expect(digest.text).toContain("test: vitest run");
    // The planner knows what the project already uses.
    expect(digest.text).toContain("- package.json (web-app) workspaces");
    expect(digest.text).toContain("  dependencies: express, zod\n");
    expect(digest.text).toContain("Never edit generated/ by hand.");
    expect(digest.text).toContain("A small web app.");
    expect(digest.text).toMatch(/TypeScript 3/);
    expect(digest.text.length).toBeLessThanOrEqual(8000);
    expect(digest.commands).toEqual([
      { kind: "test", argv: ["npm", "test"], source: 'package.json script "test"' },
      {
        kind: "typecheck",
        argv: ["npm", "run", "typecheck"],
        source: 'package.json script "typecheck"',
      },
      { kind: "lint", argv: ["npm", "run", "lint"], source: 'package.json script "lint"' },
    ]);
    expect(digest.files).toBe(8);
  });

  it("run in a package of a monorepo, still reads the notes for agents at the repository's top", async () => {
    const repo = makeRepo({
      "AGENTS.md": "Every package tests with vitest.\n",
      "packages/api/package.json": JSON.stringify({ scripts: { test: "vitest run" } }),
      "packages/api/src/server.ts": "export {};\n",
    });
    const digest = await projectDigest(join(repo, "packages/api"), { cacheDir: cacheDir() });
    expect(digest.text).toContain("AGENTS.md (at the repository's top)");
    expect(digest.text).toContain("Every package tests with vitest.");
    expect(digest.text).toContain("src/server.ts");
    expect(digest.files).toBe(2);
  });

  it("is cached per tree state: the same tree reads from the cache, an edit makes it again", async () => {
    const repo = makeRepo(webApp);
    const dir = cacheDir();
    const first = await projectDigest(repo, { cacheDir: dir });
    const second = await projectDigest(repo, { cacheDir: dir });
    expect(first.cached).toBe(false);
    expect(second).toEqual({ ...first, cached: true });
    writeFiles(repo, { "src/new-module.ts": "export {};\n" });
    const third = await projectDigest(repo, { cacheDir: dir });
    expect(third.cached).toBe(false);
    expect(third.key).not.toBe(first.key);
    expect(third.text).toContain("src/new-module.ts");
    // A script changed in place is seen too.
    writeFiles(repo, {
      "package.json": JSON.stringify({ name: "web-app", scripts: { test: "jest" } }),
    });
    const fourth = await projectDigest(repo, { cacheDir: dir });
    expect(fourth.text).toContain("test: jest");
  });

  it("finds the commands of Python, Rust, Go and make projects, and skips npm's placeholder test", async () => {
    const python = makeRepo({
      "pyproject.toml": '[project]\nname = "tool"\n[tool.pytest.ini_options]\n',
      "tests/test_tool.py": "def test_ok(): pass\n",
    });
    mkdirSync(join(python, ".venv", "bin"), { recursive: true });
    writeFileSync(join(python, ".venv", "bin", "python"), "", { mode: 0o755 });
    const cases: [string, string[]][] = [
      [python, [".venv/bin/python", "-m", "pytest", "-q"]],
      [makeRepo({ "Cargo.toml": '[package]\nname = "x"\n', "src/main.rs": "" }), ["cargo", "test"]],
      [makeRepo({ "go.mod": "module example.com/x\n", "main.go": "" }), ["go", "test", "./..."]],
      [makeRepo({ Makefile: "build:\n\tcc x.c\ntest: build\n\t./t\n" }), ["make", "test"]],
    ];
    for (const [repo, argv] of cases) {
      const digest = await projectDigest(repo, { cacheDir: cacheDir() });
      expect(digest.commands.find((c) => c.kind === "test")?.argv).toEqual(argv);
    }
    const placeholder = makeRepo({
      "package.json": JSON.stringify({
        scripts: { test: 'echo "Error: no test specified" && exit 1' },
      }),
    });
    expect((await projectDigest(placeholder, { cacheDir: cacheDir() })).commands).toEqual([]);
  });

  it("reads a directory that is no repository, and a pnpm workspace's runner", async () => {
    const plain = mkdtempSync(join(tmpdir(), "taskledger-plain-"));
    writeFiles(plain, {
      "package.json": JSON.stringify({ scripts: { test: "node --test" } }),
      "pnpm-lock.yaml": "",
      "lib/index.js": "",
      "node_modules/dep/index.js": "",
    });
    const digest = await projectDigest(plain, { cacheDir: cacheDir() });
    expect(digest.commands[0]?.argv).toEqual(["pnpm", "test"]);
    expect(digest.text).toContain("lib/index.js");
    expect(digest.text).not.toContain("node_modules/dep");
  });

  it("stays bounded on a 50,000-file repository", async () => {
    const repo = makeRepo({ "package.json": '{"scripts":{"test":"vitest"}}' });
    // 50,000 tracked files, written straight into git's index and history: the checkout is
    // not what is measured, the listing and the digest are.
    const git = (args: string[], input: string) =>
      execFileSync("git", args, { cwd: repo, input, encoding: "utf8" }).trim();
    const blob = git(["hash-object", "-w", "--stdin"], "export {};\n");
    const lines: string[] = [];
    for (let i = 0; i < 50_000; i++) {
      lines.push(`100644 ${blob}\tsrc/module-${Math.floor(i / 500)}/file-${i}.ts`);
    }
    git(["update-index", "--index-info"], `${lines.join("\n")}\n`);
    const digest = await projectDigest(repo, { cacheDir: cacheDir() });
    expect(digest.files).toBe(50_001);
    expect(digest.text.length).toBeLessThanOrEqual(8000);
    expect(digest.text).toContain("src/ (50000 files)");
    // Filled to its budget by whole paths, never cut in the middle.
    expect(digest.text).not.toContain("characters cut");
    expect(digest.text).toContain("… and ");
    expect(digest.commands[0]?.argv).toEqual(["npm", "test"]);
  });
});
