// The project's own test, typecheck and lint commands, read from its manifests for the digest.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ProjectCommand } from "@taskledger/core";

const npmPlaceholderTest = /no test specified/;

export function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function scriptsOf(pkg: Record<string, unknown> | undefined): Record<string, string> {
  const scripts = pkg?.scripts;
  if (!scripts || typeof scripts !== "object") return {};
  return Object.fromEntries(
    Object.entries(scripts).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** The test, typecheck and lint commands the top manifests name, for the run's directory. */
export function projectCommands(
  cwd: string,
  files: readonly string[],
  texts: ReadonlyMap<string, string>,
): ProjectCommand[] {
  const commands: ProjectCommand[] = [];
  const pkg = texts.has("package.json") ? parseJson(texts.get("package.json") ?? "") : undefined;
  if (pkg) {
    const runner = packageRunner(files, pkg);
    const scripts = scriptsOf(pkg);
    const pick = (kind: ProjectCommand["kind"], names: string[]) => {
      const name = names.find((n) => scripts[n] !== undefined);
      if (name === undefined) return;
      if (kind === "test" && npmPlaceholderTest.test(scripts[name] ?? "")) return;
      const argv = name === "test" && runner !== "bun" ? [runner, "test"] : [runner, "run", name];
      commands.push({ kind, argv, source: `package.json script "${name}"` });
    };
    pick("test", ["test"]);
    pick("typecheck", ["typecheck", "type-check", "check-types", "tsc"]);
    pick("lint", ["lint"]);
  }
  const python = existsSync(join(cwd, ".venv", "bin", "python"))
    ? ".venv/bin/python"
    : existsSync(join(cwd, "venv", "bin", "python"))
      ? "venv/bin/python"
      : "python3";
  const pyproject = texts.get("pyproject.toml") ?? "";
  const pythonTests = files.some((f) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(f));
  if (
    !commands.some((c) => c.kind === "test") &&
    (/pytest/.test(pyproject) || (pythonTests && texts.has("pyproject.toml")) || pythonTests)
  ) {
    commands.push({
      kind: "test",
      argv: [python, "-m", "pytest", "-q"],
      source: /pytest/.test(pyproject) ? "pyproject.toml names pytest" : "test_*.py files",
    });
  }
  if (!commands.some((c) => c.kind === "test") && texts.has("Cargo.toml")) {
    commands.push({ kind: "test", argv: ["cargo", "test"], source: "Cargo.toml" });
  }
  if (!commands.some((c) => c.kind === "test") && texts.has("go.mod")) {
    commands.push({ kind: "test", argv: ["go", "test", "./..."], source: "go.mod" });
  }
  const makefile = texts.get("Makefile");
  if (makefile !== undefined) {
    for (const kind of ["test", "lint"] as const) {
      if (
        !commands.some((c) => c.kind === kind) &&
        new RegExp(`^${kind}\\s*:`, "m").test(makefile)
      ) {
        commands.push({ kind, argv: ["make", kind], source: `Makefile target "${kind}"` });
      }
    }
  }
  return commands;
}

function packageRunner(files: readonly string[], pkg: Record<string, unknown>): string {
  const declared = typeof pkg.packageManager === "string" ? pkg.packageManager.split("@")[0] : "";
  if (declared && ["npm", "pnpm", "yarn", "bun"].includes(declared)) return declared;
  if (files.includes("pnpm-lock.yaml")) return "pnpm";
  if (files.includes("yarn.lock")) return "yarn";
  if (files.includes("bun.lock") || files.includes("bun.lockb")) return "bun";
  return "npm";
}
