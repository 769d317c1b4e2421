import { describe, expect, it } from "vitest";
import { changedLines, distinctiveDiff } from "./candidate-diff-view.js";

const sets = (diffs: string[]) => diffs.map(changedLines);

/** A new file `sum.js` of `lines` lines, with `decisive` at line `at`: what `git diff` shows. */
function newFileDiff(lines: number, at: number, decisive: string, file = "sum.js"): string {
  const body = Array.from({ length: lines }, (_, i) =>
    i === at ? `+${decisive}` : `+const v${i} = ${i};`,
  );
  return [
    `diff --git a/${file} b/${file}`,
    "new file mode 100644",
    "index 0000000..1111111",
    "--- /dev/null",
    `+++ b/${file}`,
    `@@ -0,0 +1,${lines} @@`,
    ...body,
  ].join("\n");
}

describe("distinctiveDiff", () => {
  it("leaves a diff that fits, and one with no other candidate, as it is", () => {
    const diff = newFileDiff(2_000, 1_000, "return a + b;");
    expect(distinctiveDiff(diff, sets([newFileDiff(2_000, 1_000, "return 0;")]), diff.length)).toBe(
      diff,
    );
    expect(distinctiveDiff(diff, [], 100)).toBe(diff);
  });

  it("shows where a long diff differs from the others, with its headers and context, and folds the rest", () => {
    const mine = newFileDiff(2_000, 1_000, "return a + b;");
    const view = distinctiveDiff(mine, sets([newFileDiff(2_000, 1_000, "return a - b;")]), 2_000);
    const lines = view.split("\n");
    expect(lines.slice(0, 6)).toEqual(mine.split("\n").slice(0, 6));
    expect(lines.slice(6)).toEqual([
      "[… 997 lines left out: unchanged, or changed alike by every other candidate …]",
      "+const v997 = 997;",
      "+const v998 = 998;",
      "+const v999 = 999;",
      "+return a + b;",
      "+const v1001 = 1001;",
      "+const v1002 = 1002;",
      "+const v1003 = 1003;",
      "[… 996 lines left out: unchanged, or changed alike by every other candidate …]",
    ]);
  });

  it("keeps a change that some other candidate lacks, even when another shares it", () => {
    const wrong = newFileDiff(3_000, 2_500, "return a - b;");
    const right = newFileDiff(3_000, 2_500, "return a + b;");
    // Two wrong candidates alike and one right: each wrong one still shows its wrong line.
    const wrongView = distinctiveDiff(wrong, sets([wrong, right]), 5_000);
    const rightView = distinctiveDiff(right, sets([wrong, wrong]), 5_000);
    expect(wrongView).toContain("+return a - b;");
    expect(rightView).toContain("+return a + b;");
    // Folded, not left whole: the line is shown because it is its own.
    expect(wrongView.length).toBeLessThan(1_000);
    expect(rightView.length).toBeLessThan(1_000);
  });

  it("folds a file every candidate changed alike, headers and all", () => {
    const shared = newFileDiff(500, 10, "const same = 1;", "shared.js");
    const mine = `${shared}\n${newFileDiff(500, 250, "return a + b;")}`;
    const theirs = `${shared}\n${newFileDiff(500, 250, "return 0;")}`;
    const view = distinctiveDiff(mine, sets([theirs]), 1_000);
    expect(view).not.toContain("shared.js");
    expect(view).toContain("diff --git a/sum.js b/sum.js");
    expect(view).toContain("+return a + b;");
    expect(view.startsWith("[… 506 lines left out")).toBe(true);
  });

  it("leaves diffs identical to every other's as they are, for the caller to clip", () => {
    const diff = newFileDiff(2_000, 3, "return a + b;");
    expect(distinctiveDiff(diff, sets([diff, diff]), 100)).toBe(diff);
  });
});
