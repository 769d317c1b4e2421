import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import {
  clipMiddle,
  oneLine,
  type ProjectDigest,
  type ProjectSource,
  projectDigestTokens,
} from "@taskledger/core";
import { cacheDirectory } from "../cache-directory.js";
import { git, splitNul } from "../git/git.js";
import { dependencyLine } from "./manifest-dependencies.js";
import { parseJson, projectCommands, scriptsOf } from "./project-commands.js";

export interface ProjectDigestOptions {
  /** Where digests are cached by tree state. Default: `<cacheDirectory()>/digests`. */
  cacheDir?: string;
  /** Characters the digest may take. Default: 4 per token of core's `projectDigestTokens`. */
  maxChars?: number;
}

const manifestNames = new Set([
  "package.json",
  "pyproject.toml",
  "setup.py",
  "setup.cfg",
  "requirements.txt",
  "Cargo.toml",
  "go.mod",
  "Makefile",
  "pom.xml",
  "build.gradle",
  "build.gradle.kts",
  "Gemfile",
  "composer.json",
  "deno.json",
]);
const maxManifests = 12;
const maxFileBytes = 64 * 1024;
// A directory walk outside git stops here; a repository's list is git's, of any size.
const maxWalkedFiles = 50_000;
const skippedDirs = new Set([".git", "node_modules", ".venv", "venv", "dist", "build", "target"]);
// Part of the cache key: a digest made by an older taskledger is made again.
const digestFormat = 2;

const languages: Record<string, string> = {
  ".ts": "TypeScript",
  ".tsx": "TypeScript",
  ".mts": "TypeScript",
  ".cts": "TypeScript",
  ".js": "JavaScript",
  ".jsx": "JavaScript",
  ".mjs": "JavaScript",
  ".cjs": "JavaScript",
  ".py": "Python",
  ".rs": "Rust",
  ".go": "Go",
  ".java": "Java",
  ".kt": "Kotlin",
  ".rb": "Ruby",
  ".php": "PHP",
  ".cs": "C#",
  ".c": "C",
  ".h": "C",
  ".cc": "C++",
  ".cpp": "C++",
  ".hpp": "C++",
  ".swift": "Swift",
  ".sh": "Shell",
  ".vue": "Vue",
  ".svelte": "Svelte",
  ".css": "CSS",
  ".scss": "CSS",
  ".html": "HTML",
  ".md": "Markdown",
};

/**
 * The project digests of a machine: each made from the files git tracks (or a bounded walk outside
 * a repository), the manifests, their scripts and the project's notes for agents, cached by tree
 * state in the cache directory.
 */
export function projectDigests(options: ProjectDigestOptions = {}): ProjectSource {
  return {
    digest: (cwd, { abortSignal }) => projectDigest(cwd, { ...options, abortSignal }),
  };
}

/** The digest of `cwd`, from the cache when its tree has not changed since. */
export async function projectDigest(
  cwd: string,
  options: ProjectDigestOptions & { abortSignal?: AbortSignal } = {},
): Promise<ProjectDigest & { cached: boolean }> {
  const maxChars = options.maxChars ?? projectDigestTokens * 4;
  const listing = await listFiles(cwd, options.abortSignal);
  const cacheFile = join(
    options.cacheDir ?? join(cacheDirectory(), "digests"),
    `${createHash("sha256").update(cwd).digest("hex").slice(0, 16)}.json`,
  );
  const key = listing.key
    ? createHash("sha256")
        .update(`${digestFormat}\0${listing.key}\0${maxChars}`)
        .digest("hex")
        .slice(0, 32)
    : undefined;
  if (key) {
    const cached = await readFile(cacheFile, "utf8")
      .then((text) => JSON.parse(text) as ProjectDigest)
      .catch(() => undefined);
    if (cached?.key === key) return { ...cached, cached: true };
  }
  const digest = await buildDigest(cwd, listing, maxChars);
  const result: ProjectDigest = { ...digest, key: key ?? "" };
  if (key) {
    // Written whole, then renamed: a reader never sees half a digest.
    await mkdir(dirname(cacheFile), { recursive: true });
    const temporary = `${cacheFile}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(result));
    await rename(temporary, cacheFile);
  }
  return { ...result, cached: false };
}

interface Listing {
  files: string[];
  truncated: boolean;
  /** Notes for agents at the repository's top when the run is in a directory below it. */
  topNotes?: string[];
  /** The tree state, when git can say it; a walked directory is not cached. */
  key?: string;
}

async function listFiles(cwd: string, abortSignal: AbortSignal | undefined): Promise<Listing> {
  const inside = await git(["rev-parse", "--is-inside-work-tree"], {
    cwd,
    abortSignal,
    okCodes: [128],
  });
  if (inside.code !== 0 || inside.stdout.trim() !== "true") return walk(cwd);
  const [listed, head, status, prefix] = await Promise.all([
    git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd,
      abortSignal,
      maxOutputBytes: 256 * 1024 * 1024,
    }),
    git(["rev-parse", "HEAD^{tree}"], { cwd, abortSignal, okCodes: [128] }),
    git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "."], {
      cwd,
      abortSignal,
      maxOutputBytes: 64 * 1024 * 1024,
    }),
    git(["rev-parse", "--show-prefix"], { cwd, abortSignal }),
  ]);
  const files = splitNul(listed.stdout);
  // A run in a package of a monorepo still gets the notes for agents kept at the top.
  const up = prefix.stdout
    .trim()
    .split("/")
    .filter(Boolean)
    .map(() => "..");
  const topNotes =
    up.length === 0
      ? []
      : ["AGENTS.md", "CLAUDE.md"]
          .filter((name) => !files.includes(name))
          .map((name) => join(...up, name))
          .filter((path) => existsSync(join(cwd, path)));
  // What git tracks, what it would add, and every change since HEAD: a new edit is a new key.
  const key = createHash("sha256")
    .update(`${cwd}\0${head.stdout.trim()}\0`)
    .update(status.stdout)
    .update(await manifestStamps(cwd, [...files, ...topNotes]))
    .digest("hex");
  return { files, truncated: false, key, topNotes };
}

/** Sizes and times of the files the digest reads: a change git's status misses still shows. */
async function manifestStamps(cwd: string, files: readonly string[]): Promise<string> {
  const read = files.filter((f) => isManifest(f) || isNote(f));
  const stamps = await Promise.all(
    read.slice(0, 64).map(async (file) => {
      const handle = await open(join(cwd, file)).catch(() => undefined);
      if (!handle) return `${file}:-`;
      try {
        const stat = await handle.stat();
        return `${file}:${stat.size}:${stat.mtimeMs}`;
      } finally {
        await handle.close();
      }
    }),
  );
  return stamps.join("\n");
}

async function walk(cwd: string): Promise<Listing> {
  const files: string[] = [];
  const queue = [""];
  while (queue.length > 0 && files.length < maxWalkedFiles) {
    const dir = queue.shift() ?? "";
    const entries = await readdir(join(cwd, dir), { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!skippedDirs.has(entry.name)) queue.push(path);
      } else if (entry.isFile() && files.length < maxWalkedFiles) files.push(path);
    }
  }
  return { files, truncated: files.length >= maxWalkedFiles };
}

const isManifest = (path: string) =>
  manifestNames.has(basename(path)) &&
  !path.includes("node_modules/") &&
  path.split("/").length <= 4;
const isNote = (path: string) => /^(README(\.md|\.rst|\.txt)?|AGENTS\.md|CLAUDE\.md)$/i.test(path);

async function buildDigest(
  cwd: string,
  { files, truncated, topNotes = [] }: Listing,
  maxChars: number,
): Promise<Omit<ProjectDigest, "key">> {
  const manifests = files
    .filter(isManifest)
    .sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b))
    .slice(0, maxManifests);
  const texts = new Map<string, string>();
  await Promise.all(
    manifests.map(async (path) => texts.set(path, await readHead(join(cwd, path)))),
  );
  const commands = projectCommands(cwd, files, texts);
  const notes = files.filter(isNote).sort();
  const readme = notes.find((n) => /^readme/i.test(n));
  const agentNotes = [...notes.filter((n) => !/^readme/i.test(n)), ...topNotes];

  // A body may be made for the room it gets: the tree lists as many paths as fit.
  const sections: { title: string; body: string | ((room: number) => string); share: number }[] = [
    {
      title: "Files",
      body: `${files.length}${truncated ? "+ (a bounded walk; not a git repository)" : " tracked by git"}. Languages: ${languageLine(files) || "none recognised"}.`,
      share: 0.04,
    },
    {
      title:
        "The project's own commands (usable as checks: argv, no shell, in the sub-task's copy)",
      body:
        commands.map((c) => `- ${c.kind}: ${JSON.stringify(c.argv)} (${c.source})`).join("\n") ||
        "none found",
      share: 0.08,
    },
  ];
  for (const path of agentNotes) {
    sections.push({
      title: path.startsWith("..") ? `${basename(path)} (at the repository's top)` : path,
      body: (await readHead(join(cwd, path))).trim(),
      share: 0.22 / agentNotes.length,
    });
  }
  sections.push({
    title: "Manifests",
    body: manifests.map((path) => withDependencies(path, texts.get(path) ?? "")).join("\n"),
    share: 0.22,
  });
  if (readme) {
    sections.push({
      title: `${readme} (its start)`,
      body: (await readHead(join(cwd, readme))).trim(),
      share: 0.14,
    });
  }
  sections.push({ title: "Tree", body: (room) => treeSummary(files, room), share: 0.3 });
  // Each section keeps its start within its share; what one leaves unused goes to the next.
  let spare = 0;
  const parts: string[] = [];
  for (const section of sections) {
    // The heading and the blank line before the next come out of the section's own room.
    const heading = `## ${section.title}\n`;
    const room = Math.max(0, Math.floor(maxChars * section.share) + spare - heading.length - 2);
    const given = typeof section.body === "function" ? section.body(room) : section.body;
    const body = clipMiddle(given, room, 1);
    spare = Math.max(0, room - body.length);
    if (body !== "") parts.push(`${heading}${body}`);
    else spare += heading.length + 2;
  }
  const text = parts.join("\n\n");
  return { text: clipMiddle(text, maxChars, 0.8), commands, files: files.length };
}

async function readHead(path: string): Promise<string> {
  const handle = await open(path).catch(() => undefined);
  if (!handle) return "";
  try {
    const buffer = Buffer.alloc(maxFileBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxFileBytes, 0);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

function languageLine(files: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const file of files) {
    const language = languages[extname(file).toLowerCase()];
    if (language) counts.set(language, (counts.get(language) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([name, count]) => `${name} ${count}`)
    .join(", ");
}

/** A manifest's summary with the dependencies it names under its first line. */
function withDependencies(path: string, text: string): string {
  const [first, ...rest] = manifestSummary(path, text).split("\n");
  return [first, dependencyLine(path, text), ...rest].filter((l) => l !== undefined).join("\n");
}

function manifestSummary(path: string, text: string): string {
  const name = basename(path);
  if (name === "package.json") {
    const pkg = parseJson(text);
    if (!pkg) return `- ${path}: not valid JSON`;
    const scripts = Object.entries(scriptsOf(pkg))
      .slice(0, 20)
      .map(([k, v]) => `    ${k}: ${oneLine(v, 100)}`);
    const workspaces = Array.isArray(pkg.workspaces)
      ? ` workspaces ${JSON.stringify(pkg.workspaces).slice(0, 200)}`
      : "";
    const label = typeof pkg.name === "string" ? ` (${pkg.name})` : "";
    return [
      `- ${path}${label}${workspaces}`,
      ...(scripts.length ? ["  scripts:"] : []),
      ...scripts,
    ].join("\n");
  }
  if (name === "Makefile") {
    const targets = [...text.matchAll(/^([A-Za-z0-9][\w.-]*)\s*:(?!=)/gm)].map((m) => m[1]);
    return `- ${path}: targets ${[...new Set(targets)].slice(0, 20).join(", ") || "none"}`;
  }
  if (name === "go.mod")
    return `- ${path}: ${oneLine(/^module\s+\S+/m.exec(text)?.[0] ?? "", 120)}`;
  if (name.endsWith(".toml")) {
    // Section headers and names say what the project is and which tools it configures.
    const lines = text
      .split("\n")
      .filter((l) => /^\s*\[|^\s*(name|members|requires-python)\s*=/.test(l))
      .slice(0, 15)
      .map((l) => `    ${oneLine(l.trim(), 100)}`);
    return [`- ${path}`, ...lines].join("\n");
  }
  return `- ${path}`;
}

/**
 * Every path when they fit in `room` characters; else the directories two levels down with
 * their file counts, then as many paths as fit, shallowest first.
 */
function treeSummary(files: readonly string[], room: number): string {
  const sorted = [...files].sort();
  const all = sorted.join("\n");
  if (all.length <= room) return all;
  const counts = new Map<string, number>();
  for (const file of files) {
    const parts = file.split("/");
    if (parts.length > 1) counts.set(`${parts[0]}/`, (counts.get(`${parts[0]}/`) ?? 0) + 1);
    if (parts.length > 2) {
      const second = `${parts[0]}/${parts[1]}/`;
      counts.set(second, (counts.get(second) ?? 0) + 1);
    }
  }
  const lines = [...counts]
    .sort((a, b) => a[0].localeCompare(b[0]))
    .slice(0, 120)
    .map(([dir, count]) => `${dir} (${count} files)`);
  if (counts.size > lines.length)
    lines.push(`… and ${counts.size - lines.length} more directories`);
  const byDepth = sorted.sort(
    (a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b),
  );
  // The directory lines, the "Files" heading and the closing "… and N more files" line.
  let used = lines.join("\n").length + 1 + 25 + 40;
  const shown: string[] = [];
  for (const file of byDepth) {
    if (used + file.length + 1 > room) break;
    shown.push(file);
    used += file.length + 1;
  }
  const rest = files.length - shown.length;
  return [
    ...lines,
    ...(shown.length > 0 ? ["Files, shallowest first:", ...shown] : []),
    ...(rest > 0 ? [`… and ${rest} more files`] : []),
  ].join("\n");
}
