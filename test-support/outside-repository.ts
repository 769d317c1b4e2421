import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

// Tests run in an empty directory outside any git repository: a run that defaults to the current
// directory must never take this repository as its workspace (worktrees, refs, applied changes).
const dir = mkdtempSync(join(tmpdir(), "taskledger-test-cwd-"));
process.chdir(dir);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
