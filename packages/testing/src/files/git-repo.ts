import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Runs git in `cwd` and returns its trimmed output: for tests that set up or inspect a repository. */
export function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

/** Makes `dir` a repository on branch `main` whose one commit holds `files` (path → content). */
export function createGitRepo(dir: string, files: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  gitIn(dir, "init", "-q", "-b", "main");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  gitIn(dir, "add", "-A");
  gitIn(dir, "-c", "user.name=U", "-c", "user.email=u@example.test", "commit", "-qm", "init");
  return dir;
}
