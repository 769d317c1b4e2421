import { describe, expect, it } from "vitest";
import { dependencyLine } from "./manifest-dependencies.js";

describe("dependencyLine: what a manifest says the project runs on", () => {
  it.each([
    [
      "package.json",
      JSON.stringify({
        dependencies: { react: "^19", zod: "^4" },
        devDependencies: { vitest: "5" },
      }),
      "react, zod",
    ],
    [
      "requirements.txt",
      "# web\nrequests>=2.31\n-r dev.txt\nDjango==5.0 ; python_version>'3.10'\n",
      "requests, Django",
    ],
    [
      "pyproject.toml",
      '[project]\nname = "app"\ndependencies = [\n  "httpx>=0.27",\n  "pydantic",\n]\n[tool.ruff]\nline-length = 100\n',
      "httpx, pydantic",
    ],
    [
      "pyproject.toml",
      '[tool.poetry.dependencies]\npython = "^3.12"\nfastapi = "^0.110"\n[tool.poetry.group.dev.dependencies]\npytest = "8"\n',
      "fastapi",
    ],
    [
      "Cargo.toml",
      '[package]\nname = "x"\n[dependencies]\nserde = "1"\ntokio = { version = "1" }\n[dev-dependencies]\ninsta = "1"\n',
      "serde, tokio",
    ],
    [
      "go.mod",
      "module example.com/x\n\nrequire (\n\tgithub.com/spf13/cobra v1.8.0\n\tgolang.org/x/sync v0.7.0 // indirect\n)\n",
      "github.com/spf13/cobra, golang.org/x/sync",
    ],
    ["Gemfile", "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\ngem \"pg\"\n", "rails, pg"],
    [
      "composer.json",
      JSON.stringify({ require: { php: ">=8.2", "ext-json": "*", "laravel/framework": "^11" } }),
      "laravel/framework",
    ],
  ])("%s", (name, text, names) => {
    expect(dependencyLine(name, text)).toBe(`  dependencies: ${names}`);
  });

  it("names none for a manifest without dependencies, and is bounded in count and length", () => {
    expect(dependencyLine("package.json", JSON.stringify({ name: "x" }))).toBeUndefined();
    expect(dependencyLine("Makefile", "test:\n\tnpm test\n")).toBeUndefined();
    const many = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`dep-${i}`, "1"]).concat([["x".repeat(200), "1"]]),
    );
    const line = dependencyLine("package.json", JSON.stringify({ dependencies: many }))!;
    expect(line).toContain("dep-24 … and 15 more");
    expect(line).not.toContain("dep-25,");
    expect(line).not.toContain("xxxxx");
    expect(line.length).toBeLessThan(400);
  });
});
