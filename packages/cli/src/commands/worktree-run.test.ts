import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { poolDirectory } from "@taskledger/git-workspace";
import { afterToolResult, gitIn, scriptByRole, subTaskOf } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import {
  captureIo,
  codexArgs,
  compatibleArgs,
  processesUnder,
  runJson,
  tempRepo,
  testScratch,
  useCodexKey,
  worktreesLeft,
} from "../test-support/cli-harness.js";
import { completedJudge, writeCall } from "../test-support/scripted-replies.js";

const scratch = testScratch();
useCodexKey();

const git = gitIn;

const step = (id: string, title: string, checks: unknown[] = []) => ({
  id,
  title,
  description: title,
  successCriteria: [title],
  dependsOn: [],
  checks,
});

// a and b change the same line at once; c writes its own file and checks it in its worktree.
const plan = {
  subTasks: [
    step("a", "Set line 2 of f.txt to A"),
    step("b", "Set line 2 of f.txt to B"),
    step("c", "Write c.txt", [
      { type: "command", argv: ["node", "-e", "require('fs').accessSync('c.txt')"] },
    ]),
  ],
};

/** The agents' turns: a first attempt writes its own line; one told of a conflict keeps both. */
function agentReply(request: Parameters<typeof subTaskOf>[0]) {
  const id = subTaskOf(request) ?? "";
  if (afterToolResult(request)) return { text: `Done with ${id}.` };
  const prompt = JSON.stringify(request.body);
  let content = `1\n${id.toUpperCase()}\n3\n`;
  if (id === "c") return writeCall("c.txt", "c\n", "codex");
  const met = /changed by (\w+)/.exec(prompt)?.[1];
  if (met) content = `1\n${met.toUpperCase()}\n${id.toUpperCase()}\n3\n`;
  return writeCall("f.txt", content, "codex");
}

describe("taskledger run in a git repository (real Codex, real git)", () => {
  it("--isolation worktree outside a repository is a usage error (exit 2) before any model call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "taskledger-cli-plain-"));
    const server = await scratch.server({ replies: [] });
    const t = captureIo();
    const argv = ["run", "x", "--yes", "--isolation", "worktree", "--cwd", dir];
    expect(await runCli([...argv, ...compatibleArgs(server.openaiBaseURL)], t.io)).toBe(2);
    expect(t.err()).toContain("is not in a git repository");
    expect(server.requests).toHaveLength(0);
  });

  it("isolates each attempt, merges the conflict's loser after a retry from the new tip, and applies the result", async () => {
    const repo = tempRepo("taskledger-cli-repo-", { "f.txt": "1\n2\n3\n" });
    const index = readFileSync(join(repo, ".git", "index"));
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge: (request) => completedJudge(`Did ${subTaskOf(request)}.`),
        agent: agentReply,
      }),
    });
    const { code, report, err } = await runJson("Change f.txt twice and write c.txt", [
      ...codexArgs(server.openaiBaseURL),
      "--cwd",
      repo,
      "--concurrency",
      "3",
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(err()).toContain("did not merge: f.txt also changed by");
    const [first, second] = readFileSync(join(repo, "f.txt"), "utf8").split("\n").slice(1, 3);
    expect([first, second].sort()).toEqual(["A", "B"]);
    expect(readFileSync(join(repo, "c.txt"), "utf8")).toBe("c\n");
    // Uncommitted in the user's tree; the index and branches as they were, plus the run's branch.
    expect(git(repo, "status", "--porcelain", "-uall")).toBe("M f.txt\n?? c.txt");
    expect(readFileSync(join(repo, ".git", "index")).equals(index)).toBe(true);
    const branch = `taskledger/${report.runId}`;
    expect(report.workspace).toMatchObject({ isolation: "worktree", branch, applied: true });
    expect(git(repo, "rev-list", "--merges", "--count", `main..${branch}`)).toBe("3");
    const byId = Object.fromEntries(report.subTasks.map((s) => [s.id, s]));
    expect(byId.c).toMatchObject({ filesChanged: ["c.txt"], commit: expect.any(String) });
    expect(byId.a!.attempts + byId.b!.attempts).toBe(3);
    expect(await worktreesLeft(repo)).toEqual({ outside: [], held: [] });
    expect(await processesUnder(repo)).toEqual([]);
    expect(await processesUnder(await poolDirectory(repo))).toEqual([]);

    // `taskledger clean` removes the kept slots and the ended run's refs; the branch and the
    // user's tree, index and other refs stay as they were.
    const kept = git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)!.length;
    expect(kept).toBeGreaterThan(1);
    const status = git(repo, "status", "--porcelain", "-uall");
    const cleaned = captureIo();
    expect(await runCli(["clean", "--cwd", repo], cleaned.io), cleaned.err()).toBe(0);
    expect(cleaned.out()).toContain(`Removed ${kept - 1} slot(s)`);
    expect(cleaned.out()).toContain("Removed the refs of 1 run(s)");
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
    expect(git(repo, "for-each-ref", "--format=%(refname)", "refs/taskledger/")).toBe("");
    expect(git(repo, "rev-parse", "--verify", "-q", branch)).toMatch(/^[0-9a-f]{40}$/);
    expect(git(repo, "status", "--porcelain", "-uall")).toBe(status);
    expect(readFileSync(join(repo, ".git", "index")).equals(index)).toBe(true);
  }, 180_000);
});
