import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGitRepo, gitIn } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { GitPathsCache } from "./git-paths.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "git-paths-")));

describe("GitPathsCache", () => {
  it("asks git once per directory while its .git stays the same", async () => {
    const repo = createGitRepo(join(root, "once"), { "a.txt": "a\n" });
    const cwd = join(repo, "packages", "app");
    mkdirSync(cwd, { recursive: true });
    const cache = new GitPathsCache();
    const first = await cache.get(cwd);
    expect(first).toEqual({ read: [join(repo, ".git")], write: [join(repo, ".git", "objects")] });
    // The same answer, not asked again: git would build a new one.
    expect(await cache.get(cwd)).toBe(first);
    gitIn(
      repo,
      "-c",
      "user.name=U",
      "-c",
      "user.email=u@example.test",
      "commit",
      "--allow-empty",
      "-qm",
      "b",
    );
    expect(await cache.get(`${cwd}/`)).toBe(first);
  });

  it("asks again once the directory becomes a repository", async () => {
    const cwd = join(root, "later");
    mkdirSync(cwd);
    const cache = new GitPathsCache();
    // Outside a repository (the test's temp directory is outside this one).
    expect(await cache.get(cwd)).toEqual({ read: [], write: [] });
    createGitRepo(cwd, { "a.txt": "a\n" });
    expect((await cache.get(cwd)).read).toEqual([join(cwd, ".git")]);
  });

  it("asks again when a worktree is made again at the same path, as a slot is", async () => {
    const repo = createGitRepo(join(root, "slots"), { "a.txt": "a\n" });
    const slot = join(root, "slot");
    gitIn(repo, "worktree", "add", "--detach", slot);
    const cache = new GitPathsCache();
    const before = await cache.get(slot);
    gitIn(repo, "worktree", "remove", "--force", slot);
    // Another worktree takes the first one's git directory name; the slot comes back as a third.
    gitIn(repo, "worktree", "add", "--detach", join(root, "other", "slot"));
    gitIn(repo, "worktree", "add", "--detach", slot);
    const after = await cache.get(slot);
    expect(after.write).toEqual([
      join(repo, ".git", "objects"),
      gitIn(slot, "rev-parse", "--absolute-git-dir"),
    ]);
    expect(after.write[1]).not.toBe(before.write[1]);
  });

  it("keeps at most its limit of directories, the least recently used going first", async () => {
    const dirs = ["a", "b", "c"].map((name) =>
      createGitRepo(join(root, `lru-${name}`), { "f.txt": "f\n" }),
    );
    const [a, b, c] = dirs as [string, string, string];
    const cache = new GitPathsCache(2);
    const firstA = await cache.get(a);
    const firstB = await cache.get(b);
    expect(await cache.get(a)).toBe(firstA);
    await cache.get(c);
    expect(await cache.get(a)).toBe(firstA);
    expect(await cache.get(b)).not.toBe(firstB);
  });
});
