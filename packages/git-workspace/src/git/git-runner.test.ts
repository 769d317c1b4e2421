import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive } from "@taskledger/core";
import { createGitRepo, tempDirectory } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitRunner, helperSwitch, type RunRequest, runHere } from "./git-runner.js";

const request = (cwd: string, args: string[], input = ""): RunRequest => ({
  command: "git",
  args,
  cwd,
  env: { ...process.env, LC_ALL: "C" },
  input,
  maxOutputBytes: 1024 * 1024,
  stderrTail: 4096,
});

/** Calls until the runner's helper answers them: its first calls run in this process. */
async function helperUp(runner: GitRunner, cwd: string): Promise<number> {
  for (let i = 0; i < 500 && !runner.state().viaHelper; i++) {
    await runner.run(request(cwd, ["--version"]));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const { helperPid, viaHelper } = runner.state();
  expect(viaHelper).toBe(true);
  return helperPid!;
}

const until = async (check: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
};

/** Processes whose command line starts with `program` and holds `marker`. */
function processesWith(program: string, marker: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const words = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
        return words[0] === program && words.join(" ").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("the git runner", () => {
  // The helper under test, whatever the environment running the tests says.
  const switched = process.env[helperSwitch];
  beforeAll(() => {
    delete process.env[helperSwitch];
  });
  afterAll(() => {
    if (switched !== undefined) process.env[helperSwitch] = switched;
  });

  it("gives through its helper what git gives here: bytes, stdin, exit codes, stderr", async () => {
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), {
      "a.txt": "a\n",
      "b c.txt": "b\n",
    });
    const runner = new GitRunner(60_000, 0);
    const cases = [
      ["ls-files", "-z"],
      ["hash-object", "--stdin"],
      ["rev-parse", "--verify", "no-such-ref"],
      ["cat-file", "-p", "HEAD^{tree}"],
    ];
    const here = [];
    for (const args of cases) here.push(await runHere(request(repo, args, "some input\n")));
    await helperUp(runner, repo);
    for (const [i, args] of cases.entries()) {
      const there = await runner.run(request(repo, args, "some input\n"));
      expect(there.code).toBe(here[i]!.code);
      expect(Buffer.isBuffer(there.stdout)).toBe(true);
      expect(there.stdout.equals(here[i]!.stdout)).toBe(true);
      expect(there.stderr).toBe(here[i]!.stderr);
    }
    // What was compared is what git says: NUL-separated names, a hash, a failure with its message.
    expect(here[0]!.stdout.toString()).toBe("a.txt\0b c.txt\0");
    expect(here[1]!.stdout.toString().trim()).toMatch(/^[0-9a-f]{40}$/);
    expect(here[2]!.code).toBe(128);
    expect(here[2]!.stderr).toContain("Needed a single revision");
  });

  it("stops a command past its output bound, and one cancelled, inside the helper", async () => {
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), {
      "a.txt": "a\n".repeat(1000),
    });
    const runner = new GitRunner(60_000, 0);
    await helperUp(runner, repo);
    const big = await runner.run({
      ...request(repo, ["cat-file", "-p", "HEAD:a.txt"]),
      maxOutputBytes: 100,
    });
    expect(big.overLimit).toBe(true);
    expect(big.stdout.length).toBeLessThanOrEqual(100);

    // A git that waits: its alias runs a sleep with its own output, so git alone holds the pipes.
    const marker = `${process.pid}.${Date.now() % 1000}`;
    const alias = `alias.wait=!exec sleep ${marker} >/dev/null 2>&1 </dev/null`;
    const controller = new AbortController();
    const running = runner.run({
      ...request(repo, ["-c", alias, "wait"]),
      abortSignal: controller.signal,
    });
    expect(await until(() => processesWith("sleep", marker).length > 0, 10_000)).toBe(true);
    controller.abort();
    const output = await running;
    expect(output.aborted).toBe(true);
    expect(output.signal).toBe("SIGKILL");
    // The git is gone; the sleep it started is its own (killed here).
    expect(processesWith("git", alias)).toEqual([]);
    for (const pid of processesWith("sleep", marker)) process.kill(pid, "SIGKILL");
  });

  it("leaves when idle, and is started again by the next call", async () => {
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), { "a.txt": "a\n" });
    const runner = new GitRunner(100, 0);
    const first = await helperUp(runner, repo);
    expect(await until(() => runner.state().helperPid === undefined, 10_000)).toBe(true);
    expect(isProcessAlive(first)).toBe(false);
    expect(runner.state().viaHelper).toBe(false);
    const second = await helperUp(runner, repo);
    expect(second).not.toBe(first);
  });

  it("is not started for a host smaller than its bound: git is forked there", async () => {
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), { "a.txt": "a\n" });
    const runner = new GitRunner(60_000, Number.MAX_SAFE_INTEGER);
    const release = runner.hold();
    for (let i = 0; i < 5; i++) {
      expect((await runner.run(request(repo, ["rev-parse", "HEAD"]))).code).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(runner.state()).toEqual({ helperPid: undefined, viaHelper: false });
    release();
  });

  it("starts while the host's own directory is gone", async () => {
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), { "a.txt": "a\n" });
    const gone = tempDirectory("taskledger-git-runner-cwd-");
    const before = process.cwd();
    process.chdir(gone);
    rmSync(gone, { recursive: true, force: true });
    try {
      const runner = new GitRunner(60_000, 0);
      await helperUp(runner, repo);
      expect((await runner.run(request(repo, ["rev-parse", "HEAD"]))).code).toBe(0);
    } finally {
      process.chdir(before);
    }
  });

  it("is started by a hold and stays while held, however idle; let go, it leaves", async () => {
    const runner = new GitRunner(100, 0);
    const release = runner.hold();
    expect(await until(() => runner.state().viaHelper, 10_000)).toBe(true);
    const pid = runner.state().helperPid!;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(isProcessAlive(pid)).toBe(true);
    release();
    expect(await until(() => !isProcessAlive(pid), 10_000)).toBe(true);
  });

  it("goes with its host, killing what it runs, when the host is killed", async () => {
    const dir = tempDirectory("taskledger-git-runner-");
    const repo = createGitRepo(tempDirectory("taskledger-git-runner-"), { "a.txt": "a\n" });
    const marker = `${process.pid}.${(Date.now() % 1000) + 1000}`;
    const script = join(dir, "host.mjs");
    // A host that starts a long git through its helper, then says both pids.
    writeFileSync(
      script,
      `import { GitRunner } from ${JSON.stringify(new URL("./git-runner.ts", import.meta.url).pathname)};
const runner = new GitRunner(60_000, 0);
const ask = (args) => runner.run({ command: "git", args, cwd: ${JSON.stringify(repo)}, env: process.env, input: "", maxOutputBytes: 4096, stderrTail: 100 });
while (!runner.state().viaHelper) { await ask(["--version"]); await new Promise((r) => setTimeout(r, 10)); }
void ask(["-c", "alias.wait=!exec sleep ${marker} >/dev/null 2>&1 </dev/null", "wait"]);
console.log(runner.state().helperPid);
setInterval(() => {}, 1000);
`,
    );
    const host = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = once(host, "exit").then(([code]) => {
      throw new Error(`the host exited (${code}) before it said its helper`);
    });
    const [line] = (await Promise.race([once(host.stdout, "data"), exited])) as [Buffer];
    const helper = Number(line.toString().trim());
    expect(isProcessAlive(helper)).toBe(true);
    expect(await until(() => processesWith("sleep", marker).length > 0, 10_000)).toBe(true);
    const git = processesWith("git", `alias.wait=!exec sleep ${marker}`);
    expect(git.length).toBe(1);
    host.kill("SIGKILL");
    expect(await until(() => !isProcessAlive(helper), 10_000)).toBe(true);
    expect(await until(() => !isProcessAlive(git[0]!), 10_000)).toBe(true);
    for (const pid of processesWith("sleep", marker)) process.kill(pid, "SIGKILL");
  });
});
