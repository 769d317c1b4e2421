import { basename } from "node:path";
import { parseJson } from "./project-commands.js";

// Enough to say what a project is built on; the rest is counted.
const maxNames = 25;
const maxNameChars = 60;
const nameOf = /^[A-Za-z0-9@][\w@./-]*/;

/**
 * The runtime dependencies a manifest names (package.json `dependencies`, pyproject, requirements,
 * Cargo, go.mod, Gemfile, composer.json), as one bounded line, or undefined when it names none.
 */
export function dependencyLine(path: string, text: string): string | undefined {
  const names = [...new Set(dependencyNames(basename(path), text))].filter(
    (name) => name !== "" && name.length <= maxNameChars,
  );
  if (names.length === 0) return undefined;
  const shown = names.slice(0, maxNames).join(", ");
  const rest = names.length - maxNames;
  return `  dependencies: ${shown}${rest > 0 ? ` … and ${rest} more` : ""}`;
}

function dependencyNames(name: string, text: string): string[] {
  if (name === "package.json" || name === "composer.json" || name === "deno.json") {
    const manifest = parseJson(text);
    const field =
      name === "composer.json" ? "require" : name === "deno.json" ? "imports" : "dependencies";
    const deps = manifest?.[field];
    if (!deps || typeof deps !== "object") return [];
    // composer's "php" and "ext-*" are the platform, not packages.
    return Object.keys(deps).filter((dep) => dep !== "php" && !dep.startsWith("ext-"));
  }
  if (name === "requirements.txt")
    return text
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith("#") && !line.startsWith("-"))
      .map(firstName);
  if (name === "pyproject.toml")
    return [...pyprojectList(text), ...sectionKeys(text, /^\[tool\.poetry\.dependencies\]/)].filter(
      (n) => n !== "python",
    );
  if (name === "Cargo.toml") return sectionKeys(text, /^\[dependencies\]/);
  if (name === "go.mod")
    return [...text.matchAll(/^(?:require\s+|\s+)([\w.-]+\/[\w./-]+)\s+v[\w.+-]+/gm)].map(
      (m) => m[1]!,
    );
  if (name === "Gemfile")
    return [...text.matchAll(/^\s*gem\s+["']([^"']+)["']/gm)].map((m) => m[1]!);
  return [];
}

/** The name in a requirement such as `requests>=2.31; python_version >= "3.8"`. */
function firstName(requirement: string): string {
  return nameOf.exec(requirement)?.[0] ?? "";
}

/** PEP 621's `dependencies = [...]` of `[project]`. */
function pyprojectList(text: string): string[] {
  const list = /^dependencies\s*=\s*\[([^\]]*)\]/m.exec(text)?.[1] ?? "";
  return [...list.matchAll(/["']([^"']+)["']/g)].map((m) => firstName(m[1]!.trim()));
}

/** The keys of a TOML section, up to the next section. */
function sectionKeys(text: string, header: RegExp): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => header.test(line.trim()));
  if (start === -1) return [];
  const keys: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^\s*\[/.test(line)) break;
    const key = /^\s*([A-Za-z0-9_-]+)\s*=/.exec(line)?.[1];
    if (key) keys.push(key);
  }
  return keys;
}
