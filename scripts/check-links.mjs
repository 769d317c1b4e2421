// Every relative link and image in the project's Markdown resolves: README.md, CONTRIBUTING.md,
// examples/README.md, docs/**/*.md and packages/*/README.md. A link's path must exist (relative to
// the file), and its `#anchor`, in the same file or another Markdown file, must be one of that
// file's headings as GitHub names them (or an HTML `id`/`name`). Links with a scheme (https:,
// mailto:) are not checked. Exits 1 listing each broken link as file:line → target.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = join(import.meta.dirname, "..");

function markdownFiles() {
  const files = ["README.md", "CONTRIBUTING.md", "examples/README.md"].map((f) => join(root, f));
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".md")) files.push(path);
    }
  };
  if (existsSync(join(root, "docs"))) walk(join(root, "docs"));
  for (const name of readdirSync(join(root, "packages"))) {
    files.push(join(root, "packages", name, "README.md"));
  }
  return files.filter((file) => existsSync(file));
}

const blank = (part) => part.replace(/[^\n]/g, " ");

/** The text with fenced code blocks blanked: every character kept or turned into a space. */
function withoutFences(text) {
  const lines = text.split("\n");
  let fence;
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(lines[i]);
    if (fence) {
      if (open && open[1][0] === fence[0] && open[1].length >= fence.length) fence = undefined;
      lines[i] = blank(lines[i]);
    } else if (open) {
      fence = open[1];
      lines[i] = blank(lines[i]);
    }
  }
  return lines.join("\n");
}

/** The text with what is not prose blanked (code, HTML comments), offsets and lines kept. */
function prose(text) {
  return withoutFences(text)
    .replace(/<!--[\s\S]*?-->/g, blank)
    .replace(/(`+)(?:(?!\n[ \t]*\n)[\s\S])*?[^`]\1(?!`)/g, blank);
}

/** GitHub's anchor for a heading: its text lowercased, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/`/g, "")
    .replace(/(\*\*|__|\*|\b_|_\b)/g, "");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

const anchorCache = new Map();

/** The anchors a Markdown file defines: its headings' slugs (repeats get -1, -2, …) and HTML ids. */
function anchorsOf(file) {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const counts = new Map();
  const text = withoutFences(readFileSync(file, "utf8"));
  for (const line of text.split("\n")) {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]);
      const seen = counts.get(base) ?? 0;
      counts.set(base, seen + 1);
      anchors.add(seen === 0 ? base : `${base}-${seen}`);
    }
    for (const html of line.matchAll(/<[a-z][^>]*\s(?:id|name)=["']([^"']+)["']/gi)) {
      anchors.add(html[1]);
    }
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** The target of an inline link whose `](` is at `at`, or undefined when it is not one. */
function inlineTarget(text, at) {
  let i = at + 2;
  while (text[i] === " " || text[i] === "\t") i++;
  let target = "";
  if (text[i] === "<") {
    const end = text.indexOf(">", i);
    if (end < 0 || text.slice(i, end).includes("\n")) return undefined;
    target = text.slice(i + 1, end);
    i = end + 1;
  } else {
    let depth = 0;
    for (; i < text.length; i++) {
      const c = text[i];
      if (/\s/.test(c)) break;
      if (c === "(") depth++;
      else if (c === ")") {
        if (depth === 0) break;
        depth--;
      }
      target += c;
    }
  }
  // An optional title, then the closing parenthesis.
  const rest = /^\s*(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\))?\s*\)/.exec(text.slice(i));
  return rest ? target : undefined;
}

function lineOf(text, offset) {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function linksOf(text) {
  const links = [];
  for (let at = text.indexOf("]("); at >= 0; at = text.indexOf("](", at + 2)) {
    const target = inlineTarget(text, at);
    if (target !== undefined) links.push({ target, offset: at });
  }
  for (const match of text.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*<?([^\s>]+)>?/gm)) {
    links.push({ target: match[1], offset: match.index });
  }
  for (const match of text.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)=["']([^"']+)["']/gi)) {
    links.push({ target: match[1], offset: match.index });
  }
  return links;
}

/** Why a link from `file` is broken, or undefined when it resolves. */
function problem(file, target) {
  if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return;
  const hash = target.indexOf("#");
  const pathPart = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const path = decodeURIComponent(pathPart.split("?")[0]);
  const resolved = path === "" ? file : resolve(dirname(file), path);
  if (!existsSync(resolved)) return "no such file";
  if (anchor === undefined || anchor === "") return;
  if (!resolved.endsWith(".md") || statSync(resolved).isDirectory()) return;
  if (!anchorsOf(resolved).has(anchor.toLowerCase()) && !anchorsOf(resolved).has(anchor)) {
    return `no heading #${anchor} in ${relative(root, resolved)}`;
  }
}

const broken = [];
const files = markdownFiles();
let checked = 0;
for (const file of files) {
  const text = prose(readFileSync(file, "utf8"));
  for (const { target, offset } of linksOf(text)) {
    checked++;
    const why = problem(file, target);
    if (why) broken.push(`${relative(root, file)}:${lineOf(text, offset)} → ${target} (${why})`);
  }
}

if (broken.length > 0) {
  console.error(`check-links: ${broken.length} broken link(s):`);
  for (const line of broken) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`check-links: ${checked} links in ${files.length} files resolve`);
