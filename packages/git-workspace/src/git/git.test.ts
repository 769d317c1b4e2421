import { describe, expect, it } from "vitest";
import { makeRepo } from "../test-support/git-repo.js";
import { git } from "./git.js";

describe("git", () => {
  it("stops git past the output bound with a typed error", async () => {
    const repo = makeRepo({ "big.txt": "x".repeat(200_000) });
    await expect(
      git(["cat-file", "-p", "HEAD:big.txt"], { cwd: repo, maxOutputBytes: 50_000 }),
    ).rejects.toMatchObject({ code: "workspace-error", reason: "git-failed" });
    const whole = await git(["cat-file", "-p", "HEAD:big.txt"], { cwd: repo });
    expect(whole.stdout).toHaveLength(200_000);
  });

  it("passes arguments without a shell, and names a failure with git's own message", async () => {
    const repo = makeRepo({ "a.txt": "a\n" });
    await expect(git(["rev-parse", "--verify", "$(touch pwned)"], { cwd: repo })).rejects.toThrow(
      /failed \(exit 128\): fatal: Needed a single revision/,
    );
  });

  it("rejects with AbortedError when its signal fires", async () => {
    const repo = makeRepo({ "a.txt": "a\n" });
    const controller = new AbortController();
    controller.abort();
    await expect(
      git(["status"], { cwd: repo, abortSignal: controller.signal }),
    ).rejects.toMatchObject({ code: "aborted" });
  });
});
