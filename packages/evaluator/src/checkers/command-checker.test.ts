import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AbortedError, InvalidConfigError } from "@taskledger/core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { checkContext } from "../test-support/fixtures.js";
import { commandChecker } from "./command-checker.js";
import { gate } from "./run-command.js";

const node = process.execPath;
let dir: string;

beforeEach(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), "tl-command-")));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Alive and not a zombie: a container's init may never reap an orphan. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return true;
  }
}

async function waitForPids(file: string, count: number): Promise<number[]> {
  return vi.waitFor(
    async () => {
      const pids = (await readFile(file, "utf8")).trim().split(/\s+/).map(Number);
      if (pids.length < count || pids.some(Number.isNaN)) throw new Error("not yet");
      return pids;
    },
    { timeout: 10_000, interval: 50 },
  );
}

// A parent that starts a child in its own process group, records both pids, and never ends.
const spawnFamily = (pidFile: string) =>
  `const { spawn } = require("node:child_process");
   const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
   require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, process.pid + " " + child.pid);
   setInterval(() => {}, 1000);`;

describe("commandChecker", () => {
  it("passes a command that exits 0, run without a shell in the working directory", async () => {
    const checker = commandChecker({ argv: [node, "-e", "console.log(process.cwd() + ' $HOME')"] });
    const result = await checker.check(checkContext({ cwd: dir }));
    expect(result.complete).toBe(true);
    // No shell: `$HOME` reaches the program as written.
    expect(result.detail).toContain(`${dir} $HOME`);
    expect(checker.name).toContain("command: ");
  });

  it("fails a command that exits non-zero, quoting the end of its output in the feedback", async () => {
    const script =
      "console.log('ran 12 tests'); console.error('FAIL slugify: expected a-b'); process.exit(3)";
    const result = await commandChecker({ argv: [node, "-e", script] }).check(
      checkContext({ cwd: dir }),
    );
    expect(result.complete).toBe(false);
    expect(result.feedback).toMatch(/must exit 0 but exited 3/);
    expect(result.feedback).toContain("FAIL slugify: expected a-b");
    expect(result.detail).toContain("ran 12 tests");
  });

  it("keeps output bounded, with its start and its end, however much the command prints", async () => {
    const script =
      "process.stdout.write('FIRST-LINE\\n' + 'x'.repeat(5_000_000) + '\\nLAST-LINE\\n'); process.exitCode = 1";
    const result = await commandChecker({ argv: [node, "-e", script], maxOutputBytes: 4096 }).check(
      checkContext({ cwd: dir }),
    );
    expect(result.complete).toBe(false);
    expect(result.detail!.length).toBeLessThan(4000);
    expect(result.detail).toContain("LAST-LINE");
    expect(result.detail).toContain("FIRST-LINE");
    expect(result.detail).toMatch(/cut …\]/);
    expect(result.feedback).toContain("LAST-LINE");
  });

  it("kills the whole process group when the timeout passes", async () => {
    const pidFile = join(dir, "pids");
    const checker = commandChecker({ argv: [node, "-e", spawnFamily(pidFile)], timeoutMs: 1500 });
    const result = await checker.check(checkContext({ cwd: dir }));
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("did not finish within 1.5 s");
    const pids = await waitForPids(pidFile, 2);
    await vi.waitFor(() => expect(pids.filter(isAlive)).toEqual([]), { timeout: 5000 });
  });

  it("kills what a command leaves running in its group after it exits", async () => {
    const pidFile = join(dir, "pids");
    const script = `const { spawn } = require("node:child_process");
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "inherit" });
      require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
      child.unref();`;
    const result = await commandChecker({ argv: [node, "-e", script] }).check(
      checkContext({ cwd: dir }),
    );
    expect(result.complete).toBe(true);
    const [pid] = await waitForPids(pidFile, 1);
    await vi.waitFor(() => expect(isAlive(pid!)).toBe(false), { timeout: 5000 });
  });

  it("rejects with AbortedError and kills the group when the signal aborts", async () => {
    const pidFile = join(dir, "pids");
    const controller = new AbortController();
    const checker = commandChecker({ argv: [node, "-e", spawnFamily(pidFile)] });
    const running = checker.check(checkContext({ cwd: dir, abortSignal: controller.signal }));
    const pids = await waitForPids(pidFile, 2);
    controller.abort();
    const error = await Promise.resolve(running).catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
    await vi.waitFor(() => expect(pids.filter(isAlive)).toEqual([]), { timeout: 5000 });
  });

  it("fails, without throwing, when the program does not exist", async () => {
    const result = await commandChecker({ argv: ["taskledger-no-such-program"] }).check(
      checkContext({ cwd: dir }),
    );
    expect(result.complete).toBe(false);
    expect(result.feedback).toContain("could not start (ENOENT)");
  });

  describe("when guarded by an executor's watchdog", () => {
    it("guards the group before the command starts, then runs it with its argv intact", async () => {
      const guarded: number[] = [];
      const script =
        "process.stdin.on('end', () => console.log(JSON.stringify(process.argv.slice(1))))";
      const result = await commandChecker({
        argv: [node, "-e", `${script}; process.stdin.resume()`, "a b", "$HOME", "*"],
      }).check(
        checkContext({
          cwd: dir,
          guardProcess: (p) => {
            guarded.push(p.pid);
            return () => {};
          },
        }),
      );
      expect(guarded).toHaveLength(1);
      expect(result.complete).toBe(true);
      expect(result.detail).toContain('["a b","$HOME","*"]');
    });

    it("says a missing or unrunnable program could not start, as unguarded", async () => {
      const guardProcess = () => () => {};
      const missing = await commandChecker({ argv: ["taskledger-no-such-program"] }).check(
        checkContext({ cwd: dir, guardProcess }),
      );
      expect(missing.feedback).toContain("could not start (ENOENT)");
      await writeFile(join(dir, "not-runnable.sh"), "echo hi\n", { mode: 0o644 });
      const unrunnable = await commandChecker({ argv: ["./not-runnable.sh"] }).check(
        checkContext({ cwd: dir, guardProcess }),
      );
      expect(unrunnable.feedback).toContain("could not start (EACCES)");
    });

    it("never starts the command when the host is gone before it was guarded", async () => {
      const marker = join(dir, "ran.txt");
      // The gate's end of input is what a killed host leaves: the command must not run.
      const status = (() => {
        try {
          execFileSync("/bin/sh", ["-c", gate, "/bin/sh", "-c", `echo ran > ${marker}`], {
            input: "",
          });
          return 0;
        } catch (error) {
          return (error as { status: number }).status;
        }
      })();
      expect(status).toBe(125);
      expect(existsSync(marker)).toBe(false);
    });
  });

  it("refuses an empty argv or a timeout that is not positive", () => {
    expect(() => commandChecker({ argv: [] })).toThrow(InvalidConfigError);
    expect(() => commandChecker({ argv: ["true"], timeoutMs: 0 })).toThrow(InvalidConfigError);
  });
});
