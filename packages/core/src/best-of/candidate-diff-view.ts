// What the comparative judge is shown of a diff too long for its share: where it differs from the
// other candidates. Lines every candidate changed alike cannot tell them apart.

/** Lines of context kept on each side of a line only this candidate changed. */
const contextLines = 3;

/** The added and removed lines of a unified diff, without the file headers. */
export function changedLines(diff: string): Set<string> {
  const lines = new Set<string>();
  for (const line of diff.split("\n")) if (isChange(line)) lines.add(line);
  return lines;
}

function isChange(line: string): boolean {
  return (
    (line.startsWith("+") && !line.startsWith("+++ ")) ||
    (line.startsWith("-") && !line.startsWith("--- "))
  );
}

/**
 * `diff` itself when it fits `maxChars`; else, given the `changedLines` of each other candidate, the diff with what every other candidate's diff also
 * changes, and unchanged context away from the rest, folded into markers: what fills the share is
 * where the candidates differ, under the headers of its files and hunks. Unchanged when no line is
 * its own.
 */
export function distinctiveDiff(
  diff: string,
  theirs: readonly ReadonlySet<string>[],
  maxChars: number,
): string {
  if (diff.length <= maxChars || theirs.length === 0) return diff;
  const lines = diff.split("\n");
  const keep = new Array<boolean>(lines.length).fill(false);
  let fileStart = -1;
  let hunkStart = -1;
  let owns = false;
  lines.forEach((line, i) => {
    if (line.startsWith("diff --git ")) [fileStart, hunkStart] = [i, -1];
    else if (line.startsWith("@@")) hunkStart = i;
    if (!isChange(line) || theirs.every((set) => set.has(line))) return;
    owns = true;
    // Its file's headers (up to its first hunk) and its hunk's header say where it is.
    for (let j = Math.max(0, fileStart); fileStart >= 0 && j < lines.length; j++) {
      if (lines[j]!.startsWith("@@")) break;
      keep[j] = true;
    }
    if (hunkStart >= 0) keep[hunkStart] = true;
    for (let j = Math.max(0, i - contextLines); j <= i + contextLines && j < lines.length; j++)
      keep[j] = true;
  });
  if (!owns) return diff;
  const out: string[] = [];
  let folded = 0;
  const fold = () => {
    if (folded > 0)
      out.push(
        `[… ${folded} lines left out: unchanged, or changed alike by every other candidate …]`,
      );
    folded = 0;
  };
  lines.forEach((line, i) => {
    if (keep[i]) {
      fold();
      out.push(line);
    } else folded++;
  });
  fold();
  return out.join("\n");
}
