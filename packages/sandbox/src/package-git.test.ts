import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sandbox } from "@taskledger/core";
import { createGitRepo, gitIn } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "./os-sandbox.js";
import { roomReads, worktreeTop } from "./worktree-rooms.js";

// git from a monorepo package inside the real OS sandbox, with the slots hidden as the CLI hides
// its cache directory: the package is the launch's directory, its worktree's top is not.
const probe = createSandbox({ mode: "auto" });
const status = await probe.status();
await probe.close();

async function runIn(
  sandbox: Sandbox,
  cwd: string,
  command: string,
  write: string[] = [],
  wrapped?: () => void,
) {
  const home = mkdtempSync(join(tmpdir(), "home-"));
  const launch = await sandbox.wrap({
    file: "bash",
    args: ["-c", command],
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
    write: [home, ...write],
  });
  wrapped?.();
  const child = spawn(launch.file, launch.args, { cwd, env: launch.env, detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  await launch.release();
  return { code, stdout, stderr };
}

describe.runIf(status.confined || process.env.CI).each([{ serves: false }, { serves: true }])(
  "git from a package directory in the sandbox (serves: $serves)",
  ({ serves }) => {
    const root = mkdtempSync(join(tmpdir(), "sandbox-package-git-"));
    const cache = join(root, "cache");
    const slots = join(cache, "slots");
    let sandbox: Sandbox;
    let repo: string;
    let slot: string;
    let hooks: string;

    beforeAll(async () => {
      repo = createGitRepo(join(root, "repo"), {
        "package.json": "{}\n",
        "packages/app/index.js": "app\n",
      });
      hooks = join(repo, ".git", "hooks");
      slot = join(slots, "slot-1");
      mkdirSync(slots, { recursive: true });
      gitIn(repo, "worktree", "add", "-q", "--detach", slot);
      mkdirSync(join(slots, "slot-2"));
      writeFileSync(join(slots, "slot-2", "secret.txt"), "OTHER-SLOT\n");
      writeFileSync(join(cache, "daemon.log"), "CACHE-LOG\n");
      sandbox = createSandbox({ mode: "required", denyRead: [cache], serves });
      expect(await sandbox.status()).toMatchObject({ confined: true });
    });

    afterAll(async () => {
      await sandbox?.close();
    });

    it("sees its change with git status and git log, while the repository's git state stays unwritable and the other slots hidden", async () => {
      const cwd = join(slot, "packages", "app");
      const run = await runIn(
        sandbox,
        cwd,
        [
          "echo new > new.txt",
          "git status --porcelain",
          "git log --format=log:%s",
          "cat ../../package.json",
          `cat ${slots}/slot-2/secret.txt ${slots}/slot-3/secret.txt ${cache}/daemon.log`,
          "echo x > ../../ROOT.txt",
          `echo 'echo pwned' > ${hooks}/pre-commit`,
          `echo '[core]' >> ${repo}/.git/config`,
          `echo '*' >> ${repo}/.git/info/exclude`,
          "echo end",
        ].join("; "),
        [],
        // A slot made after the launch was wrapped is as hidden as the ones before it.
        () => {
          mkdirSync(join(slots, "slot-3"));
          writeFileSync(join(slots, "slot-3", "secret.txt"), "LATER-SLOT\n");
        },
      );
      expect(run.stdout).toContain("end");
      // Before: "not a git repository (or any parent up to mount point …/slot-1/packages)".
      expect(run.stderr).not.toMatch(/not a git repository/);
      expect(run.stdout).toContain("?? packages/app/new.txt");
      expect(run.stdout).toContain("log:init");
      expect(run.stdout).toContain("{}");
      expect(readFileSync(join(cwd, "new.txt"), "utf8")).toBe("new\n");
      // The rest of the cache stays hidden: the other slot, the daemon's files.
      expect(run.stdout).not.toMatch(/OTHER-SLOT|LATER-SLOT|CACHE-LOG/);
      // The write rules are the package's: the worktree's top, the hooks, config, exclude.
      expect(existsSync(join(slot, "ROOT.txt"))).toBe(false);
      expect(run.stderr).toContain(`${hooks}/pre-commit: Read-only file system`);
      expect(existsSync(join(hooks, "pre-commit"))).toBe(false);
      expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toMatch(/\[core\]\n$/);
      expect(readFileSync(join(repo, ".git", "info", "exclude"), "utf8")).not.toMatch(/\*\n$/);
    });

    it("sees it from a directory it writes in, as opencode's server does (its cwd elsewhere)", async () => {
      const dir = join(slot, "packages", "app");
      const server = mkdtempSync(join(tmpdir(), "server-root-"));
      const run = await runIn(
        sandbox,
        server,
        `cd ${dir} && echo two > two.txt && git status --porcelain; echo '*' >> ${repo}/.git/info/exclude; echo end`,
        [dir],
      );
      expect(run.stdout).toContain("end");
      expect(run.stderr).not.toMatch(/not a git repository/);
      expect(run.stdout).toContain("?? packages/app/two.txt");
      expect(readFileSync(join(repo, ".git", "info", "exclude"), "utf8")).not.toMatch(/\*\n$/);
    });
  },
);

describe("roomReads", () => {
  it("reads back a worktree's top inside a denied directory and hides its write paths beneath it once more", () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "room-reads-")));
    const cache = join(root, "cache");
    const slot = join(cache, "slots", "slot-1");
    const app = join(slot, "packages", "app");
    mkdirSync(app, { recursive: true });
    const home = join(root, "home");
    expect(roomReads([cache, join(root, "other")], [slot], [app, slot, home])).toEqual(
      process.platform === "linux" ? { read: [slot], deny: [app] } : { read: [slot], deny: [] },
    );
    // Outside every denied directory, or the denied directory itself: nothing added.
    expect(roomReads([join(root, "other")], [slot], [app])).toEqual({ read: [], deny: [] });
    expect(roomReads([slot], [slot], [app])).toEqual({ read: [], deny: [] });
    expect(worktreeTop(app)).toBeUndefined();
    writeFileSync(join(slot, ".git"), "gitdir: elsewhere\n");
    expect(worktreeTop(app)).toBe(slot);
  });
});
