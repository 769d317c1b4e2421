// Whether two sub-tasks' declared paths (globs from the run's directory) may name the same file.
// Conservative: "maybe" is yes, so two sub-tasks that could collide never run at once.

const globChars = /[*?[{]/;

/** True when some path of `a` and some path of `b` may be the same file or one holds the other. */
export function pathsOverlap(a: readonly string[], b: readonly string[]): boolean {
  if (a.length === 0 || b.length === 0) return false;
  const left = a.map(normalise);
  const right = b.map(normalise);
  return left.some((x) => right.some((y) => patternsOverlap(x, y)));
}

function normalise(pattern: string): string {
  let p = pattern
    .trim()
    .replace(/\\/g, "/")
    .replace(/^(\.\/)+/, "");
  if (p.endsWith("/")) p = `${p}**`;
  return p.replace(/\/{2,}/g, "/") || "**";
}

function patternsOverlap(x: string, y: string): boolean {
  const xGlob = globChars.test(x);
  const yGlob = globChars.test(y);
  if (!xGlob && !yGlob) return x === y || within(x, y) || within(y, x);
  if (!xGlob) return literalMeetsGlob(x, y);
  if (!yGlob) return literalMeetsGlob(y, x);
  // Two globs: they may meet unless their fixed leading directories part ways.
  const px = fixedPrefix(x);
  const py = fixedPrefix(y);
  return px === py || within(px, py) || within(py, px) || px === "" || py === "";
}

/** `inner` is `outer` or a path under it. */
function within(inner: string, outer: string): boolean {
  return outer === "" || inner === outer || inner.startsWith(`${outer}/`);
}

function literalMeetsGlob(literal: string, glob: string): boolean {
  if (globRegExp(glob).test(literal)) return true;
  // The literal may be a directory holding what the glob names.
  const prefix = fixedPrefix(glob);
  return within(prefix, literal);
}

/** The leading directories of a glob before its first wildcard segment. */
function fixedPrefix(glob: string): string {
  const segments = glob.split("/");
  const fixed: string[] = [];
  for (const segment of segments) {
    if (globChars.test(segment)) break;
    fixed.push(segment);
  }
  return fixed.join("/");
}

/** A glob as a regular expression: `**` any depth, `*` and `?` within a segment, `{a,b}`, `[…]`. */
export function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? "";
    if (c === "*" && glob[i + 1] === "*") {
      const slash = glob[i + 2] === "/";
      out += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else if (c === "{") {
      const end = glob.indexOf("}", i);
      if (end < 0) out += "\\{";
      else {
        const options = glob
          .slice(i + 1, end)
          .split(",")
          .map(escapeRegExp);
        out += `(?:${options.join("|")})`;
        i = end;
      }
    } else if (c === "[") {
      const end = glob.indexOf("]", i + 1);
      if (end < 0) out += "\\[";
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\");
        out += `[${body}]`;
        i = end;
      }
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+^$()|\\/]/g, "\\$&");
}
