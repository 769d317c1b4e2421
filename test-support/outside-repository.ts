import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

// Tests run in an empty directory outside any git repository: a run that defaults to the current
// directory must never take this repository as its workspace (worktrees, refs, applied changes).
// Their temporary files (and their children's: TMPDIR is inherited) go under the same directory,
// removed after the file's tests, so a run of the suite leaves nothing in the temp directory. So do
// the worktree slots runs keep between them (the cache directory), which would otherwise outlive
// the test's repository in the user's home.
const root = mkdtempSync(join(tmpdir(), "taskledger-test-"));
const cwd = join(root, "cwd");
const tmp = join(root, "tmp");
mkdirSync(cwd);
mkdirSync(tmp);
process.chdir(cwd);
process.env.TMPDIR = tmp;
process.env.TASKLEDGER_CACHE_DIR = join(root, "cache");
afterAll(() => rmSync(root, { recursive: true, force: true, maxRetries: 3 }));
