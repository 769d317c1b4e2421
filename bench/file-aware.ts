// File-aware scheduling and the project digest (issue 29). Builds its own repositories in a
// temporary directory, so it gives the same answer wherever it is started.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createManager,
  type Executor,
  emptyUsage,
  estimateTokens,
  type RunEvent,
  type SubTaskInput,
} from "@taskledger/core";
import { gitWorkspaces, projectDigest } from "@taskledger/git-workspace";
import { createGitRepo, tempDirectory } from "@taskledger/testing";

// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-files-");
process.env.TASKLEDGER_CACHE_DIR ??= join(benchDir, "cache");

/** An attempt that takes `delayMs`, then appends a line to the one file its sub-task edits. */
function appendingExecutor(fileOf: (id: string) => string, delayMs: number): Executor {
  return {
    async run(_prompt, options) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const file = fileOf(options.subTask.id);
      await appendFile(join(options.cwd, file), `edited by ${options.subTask.id}\n`);
      return {
        outcome: "finished",
        finalText: `appended to ${file}`,
        toolCalls: [],
        stepFinishReasons: ["stop"],
        filesChanged: [file],
        usage: emptyUsage(),
        durationMs: delayMs,
      };
    },
  };
}

export interface FileAwareRow {
  scheduling: "file-aware" | "paths not declared";
  subTasks: number;
  files: number;
  conflicts: number;
  attempts: number;
  completed: number;
  makespanMs: number;
}

/**
 * `subTasks` independent sub-tasks, each appending to one of `files` shared files (so every file
 * is edited by `subTasks / files` of them), attempts of `delayMs`, all at once (concurrency =
 * sub-tasks), in worktrees: merge conflicts and makespan with and without declared paths.
 */
export async function benchFileAware(
  subTasks = 12,
  files = 3,
  delayMs = 500,
): Promise<FileAwareRow[]> {
  const fileOf = (id: string) => `shared/f${Number(id.slice(1)) % files}.txt`;
  const rows: FileAwareRow[] = [];
  for (const declared of [false, true]) {
    const contents: Record<string, string> = {};
    for (let i = 0; i < files; i++) contents[`shared/f${i}.txt`] = "first line\n";
    for (let i = 0; i < 200; i++) contents[`src/m${i}.txt`] = `${i}\n`;
    const repo = createGitRepo(mkdtempSync(join(benchDir, "repo-")), contents);
    const plan = {
      subTasks: Array.from(
        { length: subTasks },
        (_, i): SubTaskInput => ({
          id: `s${i}`,
          title: `edit ${fileOf(`s${i}`)}`,
          description: "append a line",
          successCriteria: ["appended"],
          ...(declared ? { paths: [fileOf(`s${i}`)] } : {}),
        }),
      ),
    };
    const events: RunEvent[] = [];
    const manager = createManager({
      cwd: repo,
      executor: appendingExecutor(fileOf, delayMs),
      concurrency: subTasks,
      maxRetries: subTasks,
      isolation: "worktree",
      workspaces: gitWorkspaces({ slots: { maxSlots: subTasks } }),
      project: false,
    });
    const started = performance.now();
    const report = await manager.run("bench", { plan, onEvent: (e) => events.push(e) });
    const makespanMs = Math.round(performance.now() - started);
    execFileSync("git", ["reset", "-q", "--hard"], { cwd: repo });
    rows.push({
      scheduling: declared ? "file-aware" : "paths not declared",
      subTasks,
      files,
      conflicts: events.filter((e) => e.type === "sub-task-conflicted").length,
      attempts: events.filter((e) => e.type === "sub-task-started").length,
      completed: report.subTasks.filter((s) => s.status === "completed").length,
      makespanMs,
    });
  }
  return rows;
}

export interface DigestRow {
  files: number;
  chars: number;
  tokens: number;
  coldMs: number;
  warmMs: number;
}

/** The digest of repositories of 1k, 10k and 50k tracked files: its size, made and from cache. */
export async function benchDigestSize(sizes = [1000, 10_000, 50_000]): Promise<DigestRow[]> {
  const rows: DigestRow[] = [];
  for (const size of sizes) {
    const repo = createGitRepo(mkdtempSync(join(benchDir, "digest-")), {
      "package.json": JSON.stringify({ scripts: { test: "vitest run", typecheck: "tsc" } }),
      "AGENTS.md": "# Agents\nRun npm test.\n",
      "README.md": "# Project\n",
    });
    const git = (args: string[], input: string) =>
      execFileSync("git", args, { cwd: repo, input, encoding: "utf8" }).trim();
    const blob = git(["hash-object", "-w", "--stdin"], "export {};\n");
    const lines = Array.from(
      { length: size - 3 },
      (_, i) => `100644 ${blob}\tsrc/area-${i % 40}/module-${Math.floor(i / 40) % 50}/f${i}.ts`,
    );
    git(["update-index", "--index-info"], `${lines.join("\n")}\n`);
    git(["commit", "-q", "-m", "files"], "");
    // The files exist in git's history and index only; check them out so status sees a clean tree.
    git(["checkout", "-q", "--", "."], "");
    const cacheDir = mkdtempSync(join(benchDir, "digest-cache-"));
    let started = performance.now();
    const digest = await projectDigest(repo, { cacheDir });
    const coldMs = performance.now() - started;
    started = performance.now();
    const again = await projectDigest(repo, { cacheDir });
    const warmMs = performance.now() - started;
    if (!again.cached) throw new Error("the second digest did not come from the cache");
    rows.push({
      files: digest.files,
      chars: digest.text.length,
      tokens: estimateTokens(digest.text),
      coldMs: Math.round(coldMs),
      warmMs: Math.round(warmMs),
    });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await benchFileAware());
  console.log(await benchDigestSize());
}
