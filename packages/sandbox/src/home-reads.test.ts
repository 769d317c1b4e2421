import { spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { InvalidConfigError, type Sandbox } from "@taskledger/core";
import { createGitRepo, gitIn, tempDirectory } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HomeReads, parseHomeRead } from "./home-reads.js";
import { createSandbox } from "./os-sandbox.js";

const probe = createSandbox({ mode: "auto" });
const status = await probe.status();
await probe.close();

function put(path: string, text: string, mode?: number): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  if (mode !== undefined) chmodSync(path, mode);
}

/** A user's home (a temp directory, never the real one) with secrets, toolchains and projects. */
function fakeHome(): { home: string; path: string; node: string; project: string } {
  const home = join(tempDirectory("home-reads-"), "user");
  put(join(home, "code", "other", ".env"), "SECRET=SIBLING-PROJECT-ENV\n");
  put(join(home, ".pgpass"), "db:5432:*:me:PGPASS-SECRET\n");
  put(join(home, ".bash_history"), "export TOKEN=HISTORY-SECRET\n");
  put(join(home, ".config", "otherapp", "token"), "OTHERAPP-TOKEN\n");
  put(join(home, ".config", "myapp", "settings"), "MYAPP-WIDENED\n");
  put(join(home, ".cargo", "credentials.toml"), "token = CARGO-REGISTRY-TOKEN\n");
  put(join(home, ".cargo", "bin", "cargo-hello"), "#!/bin/sh\necho cargo-hello-ran\n", 0o755);
  // A Node installed by nvm: the real binary, copied under the home.
  const node = join(home, ".nvm", "versions", "node", "v99.0.0", "bin", "node");
  mkdirSync(dirname(node), { recursive: true });
  copyFileSync(process.execPath, node);
  chmodSync(node, 0o755);
  // A toolchain under no known root, on PATH: its bin reads its own lib.
  put(join(home, "tools", "mytool", "lib", "data.txt"), "mytool-lib-read\n");
  put(
    join(home, "tools", "mytool", "bin", "mytool"),
    '#!/bin/sh\ncat "$(dirname "$0")/../lib/data.txt"\n',
    0o755,
  );
  // A link in a PATH directory of the home to a program elsewhere in it (pipx, Claude Code).
  put(join(home, "apps", "linked", "v1", "linked"), "#!/bin/sh\necho linked-ran\n", 0o755);
  mkdirSync(join(home, ".local", "bin"), { recursive: true });
  symlinkSync(join(home, "apps", "linked", "v1", "linked"), join(home, ".local", "bin", "linked"));
  const project = createGitRepo(join(home, "code", "proj"), { "README.md": "proj-readme\n" });
  const path = [
    dirname(node),
    join(home, ".local", "bin"),
    join(home, "tools", "mytool", "bin"),
    join(home, ".cargo", "bin"),
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
  ].join(":");
  return { home, path, node, project };
}

async function runIn(sandbox: Sandbox, cwd: string, path: string, command: string) {
  const own = tempDirectory("home-reads-private-");
  const launch = await sandbox.wrap({
    file: "bash",
    args: ["-c", command],
    cwd,
    env: { PATH: path, HOME: own, TMPDIR: own },
    write: [own],
  });
  const child = spawn(launch.file, launch.args, { cwd, env: launch.env });
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

/** Each file's content inside the sandbox, or `unreadable`. */
function catEach(files: readonly string[]): string {
  return files.map((file) => `cat '${file}' 2>/dev/null || echo 'unreadable ${file}'`).join("; ");
}

describe.runIf(status.confined || process.env.CI)("the home inside a confined launch", () => {
  const user = fakeHome();
  const { home } = user;
  const secrets = [
    join(home, "code", "other", ".env"),
    join(home, ".pgpass"),
    join(home, ".bash_history"),
    join(home, ".config", "otherapp", "token"),
    join(home, ".cargo", "credentials.toml"),
  ];
  const widened = join(home, ".config", "myapp", "settings");
  let sandbox: Sandbox;
  let widening: Sandbox;

  beforeAll(async () => {
    sandbox = createSandbox({ mode: "required", home });
    widening = createSandbox({ mode: "required", home, homeReads: ["~/.config/myapp"] });
  });

  afterAll(async () => {
    await sandbox?.close();
    await widening?.close();
  });

  it("hides the rest of the home while the project and the toolchains in it work", async () => {
    const run = await runIn(
      sandbox,
      user.project,
      user.path,
      [
        `command -v node`,
        `node -e 'console.log("node-ran", process.version)'`,
        "mytool",
        "linked",
        "cargo-hello",
        "cat README.md",
        "echo made > made.txt",
        "git status --short",
        `echo x > '${join(home, "planted.txt")}'`,
        `echo x > '${join(home, ".cargo", "planted.txt")}'`,
        catEach([...secrets, widened]),
      ].join("; "),
    );
    expect(run.stdout).toContain(`${user.node}\nnode-ran v`);
    expect(run.stdout).toContain("mytool-lib-read");
    expect(run.stdout).toContain("linked-ran");
    expect(run.stdout).toContain("cargo-hello-ran");
    expect(run.stdout).toContain("proj-readme");
    expect(run.stdout).toContain("?? made.txt");
    expect(readFileSync(join(user.project, "made.txt"), "utf8")).toBe("made\n");
    for (const secret of [...secrets, widened]) {
      expect(run.stdout).toContain(`unreadable ${secret}`);
    }
    expect(run.stdout).not.toMatch(/SIBLING-PROJECT-ENV|PGPASS-SECRET|HISTORY-SECRET|CARGO/);
    // A write to the hidden home or a toolchain in it is refused, as the home's always was.
    expect(run.stderr).toContain(`${join(home, "planted.txt")}: Read-only file system`);
    expect(run.stderr).toContain(`${join(home, ".cargo", "planted.txt")}: Read-only file system`);
    expect(existsSync(join(home, "planted.txt"))).toBe(false);
  });

  it("reads what the project widens it by, and nothing more", async () => {
    const run = await runIn(widening, user.project, user.path, catEach([...secrets, widened]));
    expect(run.stdout).toContain("MYAPP-WIDENED");
    for (const secret of secrets) expect(run.stdout).toContain(`unreadable ${secret}`);
  });

  it("writes a project that lies beneath a toolchain root (a GOPATH checkout)", async () => {
    const project = createGitRepo(join(home, "go", "src", "example.com", "app"), { "a.go": "" });
    const run = await runIn(sandbox, project, user.path, "echo w > w.txt && git status --short");
    expect(run.stdout).toContain("?? w.txt");
    expect(readFileSync(join(project, "w.txt"), "utf8")).toBe("w\n");
  });

  it("makes a worktree of a project in the home whole from a package, as git needs it", async () => {
    const repo = createGitRepo(join(home, "code", "mono"), { "packages/app/a.txt": "a\n" });
    const slot = join(dirname(home), "slot");
    gitIn(repo, "worktree", "add", "-q", "--detach", slot);
    const run = await runIn(
      sandbox,
      join(slot, "packages", "app"),
      user.path,
      `echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@b commit -qm b && echo committed; ${catEach(secrets)}`,
    );
    expect(run.stdout).toContain("committed");
    for (const secret of secrets) expect(run.stdout).toContain(`unreadable ${secret}`);
  });

  it("reads the whole home but the credential stores when widened by ~", async () => {
    const whole = createSandbox({ mode: "required", home, homeReads: ["~"] });
    try {
      const run = await runIn(whole, user.project, user.path, catEach(secrets));
      expect(run.stdout).toContain("PGPASS-SECRET");
      expect(run.stdout).toContain(`unreadable ${join(home, ".cargo", "credentials.toml")}`);
    } finally {
      await whole.close();
    }
  });

  it("keeps what the runtime makes writable in the home (npm's logs) writable beneath ~/.npm", async () => {
    // The runtime's home is the process's: this test's home stands in for it, never the real one.
    const realHome = process.env.HOME;
    process.env.HOME = home;
    const own = createSandbox({ mode: "required" });
    try {
      mkdirSync(join(home, ".npm", "_logs"), { recursive: true });
      const logs = join(home, ".npm", "_logs", "debug.log");
      const cache = join(home, ".npm", "cache.txt");
      const run = await runIn(own, user.project, user.path, `echo l > ${logs}; echo c > ${cache}`);
      expect(readFileSync(logs, "utf8")).toBe("l\n");
      expect(existsSync(cache)).toBe(false);
      expect(run.stderr).toContain(`${cache}: Read-only file system`);
    } finally {
      process.env.HOME = realHome;
      await own.close();
    }
  });

  it("still confines when the sandbox runtime itself is installed in the home", async () => {
    // This checkout as the home: the runtime's seccomp helper, in its node_modules, runs inside.
    const checkout = join(import.meta.dirname, "..", "..", "..");
    const inCheckout = createSandbox({ mode: "required", home: checkout });
    try {
      const cwd = tempDirectory("home-reads-cwd-");
      const run = await runIn(
        inCheckout,
        cwd,
        "/usr/bin:/bin",
        `echo confined; ls ${join(checkout, "README.md")}`,
      );
      expect(run.stdout).toContain("confined");
      expect(run.stderr).toMatch(/README\.md/);
    } finally {
      await inCheckout.close();
    }
  });
});

describe("homeReads entries", () => {
  it("takes ~, paths in the home and absolute paths, and refuses the rest with a typed error", () => {
    expect(parseHomeRead("~")).toBe("~");
    expect(parseHomeRead("~/.config/myapp/")).toBe("~/.config/myapp");
    expect(parseHomeRead("/home/me/.config/x")).toBe("/home/me/.config/x");
    for (const bad of ["", "relative/dir", "~other/x", "~/../etc"]) {
      expect(() => parseHomeRead(bad)).toThrow(InvalidConfigError);
    }
  });

  it("refuses a widened path outside the home or at a credential store, naming it", () => {
    expect(() => new HomeReads("/home/me", ["/etc"], [])).toThrow(/outside the home/);
    expect(() => new HomeReads("/home/me", ["~/.ssh/keys"], ["/home/me/.ssh"])).toThrow(
      /~\/.ssh\/keys is at or beneath \/home\/me\/.ssh/,
    );
    expect(() => createSandbox({ home: "/home/me", homeReads: ["~/.aws"] })).toThrow(
      InvalidConfigError,
    );
  });

  it("reads back a PATH entry's install once, and nothing in a denied directory", () => {
    const home = tempDirectory("home-reads-");
    for (const dir of ["tools/x/bin", "tools/x/lib", ".cache/taskledger/slot/node_modules/.bin"]) {
      mkdirSync(join(home, dir), { recursive: true });
    }
    const reads = new HomeReads(home, [], [join(home, ".cache", "taskledger")]);
    const path = [
      join(home, "tools/x/bin"),
      join(home, ".cache/taskledger/slot/node_modules/.bin"),
      "/usr/bin",
    ].join(":");
    expect(reads.of({ path, program: "bash" }).filter((p) => p.startsWith(home))).toEqual([
      join(home, "tools", "x"),
    ]);
  });

  it("hides nothing when the home is / or widened by ~", () => {
    expect(new HomeReads("/", [], []).hidden).toBe(false);
    expect(new HomeReads(tempDirectory("home-reads-"), ["~"], []).hidden).toBe(false);
  });
});
