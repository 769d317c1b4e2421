import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkContext } from "../test-support/fixtures.js";
import { fileExistsChecker } from "./file-exists-checker.js";
import { fileMatchesChecker } from "./file-matches-checker.js";

let root: string;
let cwd: string;

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "tl-files-")));
  cwd = join(root, "work");
  await mkdir(join(cwd, "src"), { recursive: true });
  await writeFile(join(cwd, "src", "slugify.ts"), "export function slugify(text: string) {}\n");
  await writeFile(join(root, "secret.txt"), "outside the working directory\n");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const run = (checker: ReturnType<typeof fileExistsChecker>) => checker.check(checkContext({ cwd }));

describe("fileExistsChecker", () => {
  it("passes a file that exists, relative to the working directory", async () => {
    const result = await run(fileExistsChecker("src/slugify.ts"));
    expect(result).toMatchObject({ complete: true });
    expect(result.detail).toContain("bytes");
  });

  it("fails a missing file, telling the next attempt to create it", async () => {
    const result = await run(fileExistsChecker("src/missing.ts"));
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("`src/missing.ts` must exist");
  });

  it("refuses a path that leads outside the working directory, directly or by a symlink", async () => {
    expect((await run(fileExistsChecker("../secret.txt"))).complete).toBe(false);
    expect((await run(fileExistsChecker(join(root, "secret.txt")))).complete).toBe(false);
    await symlink(join(root, "secret.txt"), join(cwd, "link.txt"));
    const viaLink = await run(fileExistsChecker("link.txt"));
    expect(viaLink.complete).toBe(false);
    expect(viaLink.detail).toContain("outside the working directory");
  });
});

describe("fileMatchesChecker", () => {
  it("passes when the text matches, with ^ and $ at line ends", async () => {
    const result = await run(fileMatchesChecker("src/slugify.ts", "^export function slugify\\("));
    expect(result.complete).toBe(true);
  });

  it("fails when the text does not match, naming file and pattern", async () => {
    const result = await run(fileMatchesChecker("src/slugify.ts", "export default"));
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("does not match /export default/");
  });

  it("fails a missing file and an invalid pattern without throwing", async () => {
    expect((await run(fileMatchesChecker("nope.ts", "x"))).feedback).toContain("does not exist");
    const invalid = await run(fileMatchesChecker("src/slugify.ts", "(unclosed"));
    expect(invalid.complete).toBe(false);
    expect(invalid.detail).toContain("invalid pattern");
  });

  it("reads only the first maxBytes of a large file", async () => {
    await writeFile(join(cwd, "big.txt"), `${"a".repeat(10_000)}NEEDLE`);
    const result = await run(fileMatchesChecker("big.txt", "NEEDLE", { maxBytes: 1000 }));
    expect(result.complete).toBe(false);
    expect(result.detail).toContain("first 1000 bytes of a larger file");
    expect((await run(fileMatchesChecker("big.txt", "NEEDLE"))).complete).toBe(true);
  });

  it("refuses a path outside the working directory", async () => {
    const result = await run(fileMatchesChecker("../secret.txt", "outside"));
    expect(result.complete).toBe(false);
  });
});
