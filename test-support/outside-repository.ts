import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { createProcessDir, sweepDeadProcessDirs } from "../packages/process/src/process-dirs.ts";
import { removeOnExit } from "../packages/testing/src/files/temp-directory.ts";

// Tests run in an empty directory outside any git repository: a run that defaults to the current
// directory must never take this repository as its workspace (worktrees, refs, applied changes).
// Their temporary files (and their children's: TMPDIR is inherited) go under the same directory,
// removed after the file's tests (or when its worker is stopped by a signal), so a run of the suite
// leaves nothing in the temp directory; one whose worker was killed outright (vitest's watchdog
// SIGKILLs workers when a run is interrupted) is removed by the next test file to start. So do
// the worktree slots runs keep between them (the cache directory), which would otherwise outlive
// the test's repository in the user's home.
// Named after this process: a later one tells a dead worker's leftover from a live one's.
// The system's temp directory, as this process found it: a worker that runs one file after another
// set TMPDIR to the last file's own directory, which is gone with it.
const shared = globalThis as { taskledgerSystemTmp?: string };
shared.taskledgerSystemTmp ??= tmpdir();
const systemTmp = shared.taskledgerSystemTmp;
await sweepDeadProcessDirs(systemTmp, "taskledger-test-");
const root = await createProcessDir(systemTmp, "taskledger-test-");
const cwd = join(root, "cwd");
const tmp = join(root, "tmp");
mkdirSync(cwd);
mkdirSync(tmp);
process.chdir(cwd);
process.env.TMPDIR = tmp;
process.env.TASKLEDGER_CACHE_DIR = join(root, "cache");
// The built CLI a test spawns keeps its servers in-process, as the tests of other things expect;
// the daemon's own tests (daemon-run.test.ts) clear this.
process.env.TASKLEDGER_DAEMON ??= "off";
// A test's opencode lives seconds: the top JIT tier compiles more than it runs then (about 13%
// of each process's CPU, docs/performance.md). Agents get it through their list (`BUN_JSC_*`).
process.env.BUN_JSC_useFTLJIT ??= "0";
afterAll(removeOnExit(root));
