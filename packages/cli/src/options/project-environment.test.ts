import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { poolDirectory } from "@taskledger/git-workspace";
import { afterToolResult, pollUntil, scriptByRole, subTaskOf } from "@taskledger/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import type { JsonReport } from "../output/json-report.js";
import {
  builtCli,
  captureIo,
  codexArgs,
  codexEnv,
  compatibleArgs,
  processesUnder,
  runJson,
  tempRepo,
  testScratch,
  useCodexKey,
} from "../test-support/cli-harness.js";
import { callThenAnswer, completedJudge, writeCall } from "../test-support/scripted-replies.js";

// The project's environment is the subject, not the agent: the runs' agent is Codex.
const scratch = testScratch();
useCodexKey();

const npmQuiet = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

/** Every file under `dir` but npm's and tools' caches: what the user's install is. */
function treeSum(dir: string): string {
  const hash = createHash("sha256");
  const walk = (path: string) => {
    for (const name of readdirSync(path).sort()) {
      if (name === ".cache") continue;
      const full = join(path, name);
      const info = lstatSync(full);
      hash.update(`${full.slice(dir.length)}:${info.mode}:${info.size}\n`);
      if (info.isSymbolicLink()) hash.update(readlinkSync(full));
      else if (info.isDirectory()) walk(full);
      else hash.update(readFileSync(full));
    }
  };
  walk(dir);
  return hash.digest("hex");
}

/**
 * A JavaScript project as users have one: a dependency installed by the real npm (ignored),
 * `npm test` needing it and a `.env` that `.worktreeinclude` brings, a config file holding the
 * check every sub-task must pass.
 */
function npmProject(): string {
  const repo = tempRepo("taskledger-npm-project-", {
    ".gitignore": "node_modules/\n.env\n",
    ".worktreeinclude": ".env\n",
    "package.json": `${JSON.stringify(
      {
        name: "project",
        private: true,
        scripts: { test: "node test.js" },
        dependencies: { "is-odd": "3.0.1" },
      },
      null,
      2,
    )}\n`,
    "test.js": [
      "const isOdd = require('is-odd');",
      "if (!require('fs').readFileSync('.env', 'utf8').includes('MODE=test')) throw new Error('no .env');",
      "for (const f of require('fs').readdirSync('.').filter((f) => /^lib-.*\\.js$/.test(f)))",
      "  if (require('./' + f)(3) !== isOdd(3)) throw new Error(f);",
      "console.log('tests pass');",
      "",
    ].join("\n"),
    "taskledger.json": `${JSON.stringify({
      $schema: "./node_modules/taskledger/taskledger.schema.json",
      checks: [{ type: "command", argv: ["npm", "test"] }],
    })}\n`,
  });
  execFileSync("npm", ["install", ...npmQuiet], { cwd: repo, stdio: "ignore" });
  execFileSync("git", ["add", "package-lock.json"], { cwd: repo });
  execFileSync(
    "git",
    ["-c", "user.name=U", "-c", "user.email=u@example.test", "commit", "-qm", "lock"],
    {
      cwd: repo,
    },
  );
  writeFileSync(join(repo, ".env"), "MODE=test\n");
  return repo;
}

const step = (id: string) => ({
  id,
  title: `Write lib-${id}.js`,
  description: `Write lib-${id}.js exporting an isOdd function.`,
  successCriteria: ["npm test passes"],
  dependsOn: [],
});

// Both plans' checks come from taskledger.json; a's agent also installs a package in its slot.
const replies = () =>
  scriptByRole({
    plan: { text: JSON.stringify({ subTasks: [step("a"), step("b")] }) },
    judge: (request) => completedJudge(`Did ${subTaskOf(request)}.`),
    agent: (request) => {
      const id = subTaskOf(request) ?? "";
      if (afterToolResult(request))
        return { text: `I wrote lib-${id}.js as asked; the sub-task is done.` };
      const lib = "module.exports = (n) => n % 2 === 1;\n";
      // Codex's shell call, told to wait up to 30 s for npm to end before it reads the output: a
      // slow install must not be left running when the agent answers.
      if (id === "a")
        return {
          toolCalls: [
            {
              name: "exec_command",
              arguments: {
                cmd: `npm install ${npmQuiet.join(" ")} left-pad@1.3.0 && echo '${lib.trim()}' > lib-a.js && npm test`,
                yield_time_ms: 30_000,
              },
            },
          ],
        };
      return writeCall(`lib-${id}.js`, lib, "codex");
    },
  });

describe("a real project's environment in every worktree (real npm, real Codex)", () => {
  let repo: string;
  beforeAll(() => {
    repo = npmProject();
  }, 120_000);

  it("runs npm test in each worktree with the user's node_modules and .env; an npm install there leaves the user's node_modules byte-identical", async () => {
    const before = treeSum(join(repo, "node_modules"));
    const server = await scratch.server({ replies: replies() });
    const { code, report, err } = await runJson("Write lib-a.js and lib-b.js", [
      ...codexArgs(server.openaiBaseURL),
      "--cwd",
      repo,
      "--concurrency",
      "2",
      // The agent's `npm install` needs the registry: the sandbox allows only what it is told.
      "--allow-host",
      execFileSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).trim(),
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(report.subTasks.map((s) => s.attempts)).toEqual([1, 1]);
    expect(err()).toContain("Project config: ");
    expect(err()).toMatch(
      /Worktree slot 1 prepared in [\d.]+m?s: copied node_modules from .*; included \.env\./,
    );
    // One slot per attempt at once, one for the project's commands at the start commit when none
    // is free then, and one for the integration gate's checks of a merged result: each got the
    // user's node_modules.
    const slots = report.workspace?.slots ?? [];
    expect(slots.length).toBeGreaterThanOrEqual(2);
    expect(slots.length).toBeLessThanOrEqual(4);
    for (const slot of slots) expect(slot.dependencies).toEqual(["node_modules"]);
    expect(err()).toContain("Before any change, npm test passes");
    // Applied: both libraries and left-pad in package.json; the user's own install untouched.
    expect(execFileSync("npm", ["test"], { cwd: repo, encoding: "utf8" })).toContain("tests pass");
    expect(existsSync(join(repo, "lib-a.js")) && existsSync(join(repo, "lib-b.js"))).toBe(true);
    expect(readFileSync(join(repo, "package.json"), "utf8")).toContain("left-pad");
    expect(existsSync(join(repo, "node_modules/left-pad"))).toBe(false);
    expect(treeSum(join(repo, "node_modules"))).toBe(before);
    const files = execFileSync(
      "git",
      ["ls-tree", "-r", "--name-only", report.subTasks[0]!.commit!],
      { cwd: repo, encoding: "utf8" },
    );
    expect(files).not.toMatch(/node_modules|\.env\n/);
    expect(await processesUnder(await poolDirectory(repo))).toEqual([]);
  }, 180_000);

  it("stops the planner and runs no attempt when the first worktree's setup fails (exit 2, its output shown)", async () => {
    const server = await scratch.server({ replies: [] });
    const t = captureIo();
    const code = await runCli(
      [
        "run",
        "x",
        "--yes",
        ...codexArgs(server.openaiBaseURL),
        "--cwd",
        repo,
        "--setup",
        "echo resolving; echo 'ERR! no such package' >&2; exit 7",
      ],
      t.io,
    );
    expect(code).toBe(2);
    expect(t.err()).toMatch(
      /setup command `echo resolving.*` failed \(exit 7\)[\s\S]*ERR! no such package/,
    );
    // The setup runs while the planner thinks: only the planner's call (and its retries, on a
    // loaded machine) went out, cut short; no agent ever asked the model anything.
    const planning = (body: unknown) => JSON.stringify(body).includes('"task_ledger"');
    expect(server.requests.filter((r) => !planning(r.body))).toEqual([]);
  });

  it("refuses a config file with an unknown key or a wrong type (exit 2, naming the key and the file)", async () => {
    const dir = tempRepo("taskledger-config-", {
      "taskledger.json": '{ "setpu": "npm ci", "concurrency": "four" }\n',
    });
    const server = await scratch.server({ replies: [] });
    const t = captureIo();
    const code = await runCli(
      ["run", "x", "--yes", ...compatibleArgs(server.openaiBaseURL), "--cwd", dir],
      t.io,
    );
    expect(code).toBe(2);
    expect(t.err()).toContain(join(dir, "taskledger.json"));
    expect(t.err()).toContain('unknown key "setpu"');
    expect(t.err()).toContain('"concurrency"');
    expect(server.requests).toHaveLength(0);
  });

  it("resumes a run killed with kill -9 during its setup: the setup left running is stopped, the run completes", async () => {
    const work = tempRepo("taskledger-setup-kill-", { "f.txt": "1\n" });
    const root = mkdtempSync(join(tmpdir(), "taskledger-setup-kill-store-"));
    const store = join(root, "store");
    const started = join(root, "setup-started");
    // The first setup hangs; the resumed run's completes at once.
    const setup = `if [ -e ${started} ]; then echo again; else touch ${started}; sleep 67.7; fi`;
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify({ subTasks: [{ ...step("a"), successCriteria: ["done"] }] }) },
        judge: completedJudge("ok"),
        agent: callThenAnswer(
          writeCall("lib-a.js", "a\n", "codex"),
          "I wrote lib-a.js as asked; the sub-task is done.",
        ),
      }),
    });
    const args = [...codexArgs(server.openaiBaseURL), "--store", store, "--cwd", work];
    const victim: ChildProcess = spawn(
      process.execPath,
      // Its marker lives outside the worktree, where a confined setup may not write.
      [builtCli, "run", "x", "--yes", "--setup", setup, "--sandbox", "off", ...args],
      {
        stdio: "ignore",
        env: { ...process.env, ...codexEnv },
      },
    );
    // pgrep leaves itself out; a shell around it would match its own command line.
    const sleeping = () => {
      try {
        return execFileSync("pgrep", ["-f", `sleep 67.7; fi$|^sleep 67.7$`], {
          encoding: "utf8",
        }).trim();
      } catch {
        return "";
      }
    };
    // The setup has begun its sleep: the run is killed in the middle of its setup.
    await pollUntil(
      async () => sleeping(),
      (pids) => pids !== "",
      600,
    );
    expect(sleeping()).not.toBe("");
    const reaped = once(victim, "exit");
    process.kill(victim.pid!, "SIGKILL");
    // Until reaped, the killed run is a zombie whose pid still holds the run's lock.
    await reaped;
    const runId = readdirSync(store)[0]!.replace(/\.jsonl$/, "");
    const t = captureIo();
    const code = await runCli(["resume", runId, "--yes", "--json", ...args], t.io);
    expect(code, t.err()).toBe(0);
    expect((JSON.parse(t.out()) as JsonReport).status).toBe("completed");
    expect(readFileSync(join(work, "lib-a.js"), "utf8")).toBe("a\n");
    expect(server.requests.length).toBeGreaterThan(0);
    expect(sleeping()).toBe("");
  }, 120_000);
});
