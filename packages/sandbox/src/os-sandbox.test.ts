import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Sandbox, SandboxUnavailableError } from "@taskledger/core";
import { createGitRepo, gitIn, pollUntil, processesUnder } from "@taskledger/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "./os-sandbox.js";

// The real OS sandbox (bubblewrap, socat, ripgrep from Debian), tried by a process that tries to
// leave: under CI a missing runtime fails the file, elsewhere one line says how to install it.
const probe = createSandbox({ mode: "auto" });
const status = await probe.status();
await probe.close();
if (!status.confined && !process.env.CI) {
  console.log(
    `sandbox tests skipped: ${status.reason}; sudo apt-get install -y bubblewrap socat ripgrep`,
  );
}

/** Processes whose command line holds `word` (Linux `/proc`). */
async function processesWith(word: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const line = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (line.split("\0").includes(word)) found.push(Number(name));
  }
  return found;
}

function listen(body: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((_request, response) => response.end(body));
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}

async function runIn(
  sandbox: Sandbox,
  cwd: string,
  command: string,
  extra: { write?: string[]; expose?: number; during?: () => Promise<void> } = {},
) {
  const home = mkdtempSync(join(tmpdir(), "home-"));
  const launch = await sandbox.wrap({
    file: "bash",
    args: ["-c", command],
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
    write: [home, ...(extra.write ?? [])],
    ...(extra.expose ? { expose: extra.expose } : {}),
  });
  const child = spawn(launch.file, launch.args, { cwd, env: launch.env, detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk;
  });
  const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
  // What the host sees while the launch is still running, before it ends and is released.
  await extra.during?.();
  const code = await closed;
  // The runtime's record of what it refused arrives over a socket a moment after the write.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const refusals = launch.refusals(stderr);
  await launch.release();
  return { code, stdout, stderr, refusals, launch };
}

describe.runIf(status.confined || process.env.CI).each([{ serves: false }, { serves: true }])(
  "createSandbox on this machine (serves: $serves)",
  ({ serves }) => {
    const root = mkdtempSync(join(tmpdir(), "sandbox-"));
    const fakeHome = join(root, "user-home");
    let sandbox: Sandbox;
    let model: { server: Server; port: number };
    let other: { server: Server; port: number };
    const realHome = process.env.HOME;

    beforeAll(async () => {
      mkdirSync(join(fakeHome, ".ssh"), { recursive: true });
      writeFileSync(join(fakeHome, ".ssh", "id_ed25519"), "PLANTED-PRIVATE-KEY\n");
      // `~` in the policy is the user's home as the host process sees it.
      process.env.HOME = fakeHome;
      model = await listen("model-ok");
      other = await listen("other-ok");
      sandbox = createSandbox({
        mode: "required",
        allowHosts: [`127.0.0.1:${model.port}`],
        serves,
      });
      expect(await sandbox.status()).toMatchObject({ confined: true });
    });

    afterAll(async () => {
      process.env.HOME = realHome;
      await sandbox?.close();
      model?.server.close();
      other?.server.close();
    });

    it("writes only in its directory and the ones it is given; what it tried is recorded", async () => {
      const repo = join(root, "mono");
      const cwd = join(repo, "packages", "app");
      mkdirSync(cwd, { recursive: true });
      const run = await runIn(
        sandbox,
        cwd,
        'echo in > inside.txt; echo up > ../../ROOT.txt; echo t > /tmp/escape-$$.txt; echo h > "$0" 2>/dev/null; echo h > ' +
          `${fakeHome}/x.txt; echo done`,
      );
      expect(run.stdout).toContain("done");
      expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("in\n");
      expect(existsSync(join(repo, "ROOT.txt"))).toBe(false);
      expect(existsSync(join(fakeHome, "x.txt"))).toBe(false);
      expect(run.stderr).toMatch(/Read-only file system/);
      const written = run.refusals.filter((r) => r.kind === "write").map((r) => r.target);
      expect(written).toContain(join(repo, "ROOT.txt"));
      expect(written).toContain(join(fakeHome, "x.txt"));
    });

    it("reads no credential store", async () => {
      const cwd = mkdtempSync(join(root, "cwd-"));
      const run = await runIn(sandbox, cwd, `cat ${fakeHome}/.ssh/id_ed25519; echo rc=$?`);
      expect(run.stdout).not.toContain("PLANTED-PRIVATE-KEY");
      expect(run.stdout).toContain("rc=1");
    });

    it("reaches its model endpoint at the same address and no other host", async () => {
      const cwd = mkdtempSync(join(root, "cwd-"));
      const run = await runIn(
        sandbox,
        cwd,
        `curl -s -m 5 http://127.0.0.1:${model.port}/; echo; curl -s -m 5 http://127.0.0.1:${other.port}/; echo other=$?; curl -s -m 5 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${other.port}/; echo proxied=$?; curl -s -m 5 http://example.com/; echo web=$?`,
      );
      expect(run.stdout).toContain("model-ok");
      expect(run.stdout).not.toContain("other-ok");
      // Each request was made and refused by the sandbox, not lost on the way: the runtime
      // records both, the other local server and the outside host.
      expect(run.stdout).toMatch(/other=\d+[\s\S]*proxied=\d+[\s\S]*web=\d+/);
      expect(run.refusals).toContainEqual(
        expect.objectContaining({ kind: "network", target: `127.0.0.1:${other.port}` }),
      );
      expect(run.refusals).toContainEqual(
        expect.objectContaining({ kind: "network", target: "example.com:80" }),
      );
    });

    it("kills what the launch leaves behind, even a process in a new session", {
      timeout: 20_000,
    }, async () => {
      const cwd = mkdtempSync(join(root, "cwd-"));
      const marker = `sleep-marker-${process.pid}-${serves}`;
      let seen: number[] = [];
      // The launch starts the sleeper in a new session, then waits for the host's word (a file
      // in its directory) before it ends: the host sees the sleeper alive first.
      const run = await runIn(
        sandbox,
        cwd,
        `setsid bash -c 'exec -a ${marker} sleep 300' > /dev/null 2>&1 & echo started; for i in $(seq 300); do [ -e go ] && break; sleep 0.05; done`,
        {
          during: async () => {
            seen = await pollUntil(
              () => processesWith(marker),
              (pids) => pids.length > 0,
              60,
            );
            writeFileSync(join(cwd, "go"), "");
          },
        },
      );
      expect(run.stdout).toContain("started");
      expect(seen).not.toEqual([]);
      // Gone the moment the launch is released: it waits for its PID namespace to end.
      expect([...(await processesUnder(cwd)), ...(await processesWith(marker))]).toEqual([]);
    });

    it("is over when its processes are: none runs the moment release() returns", {
      timeout: 20_000,
    }, async () => {
      // It leaves a process in the background whose end takes a moment (memory to give back):
      // bubblewrap's outer process exits before its pid 1 has ended the rest. One launch ends by
      // itself (its input closed), one is killed with its group (as an executor ends an attempt).
      const left = `node -e "const b=Buffer.alloc(768<<20,1);console.log('started',b.length);setTimeout(()=>{},60000)"`;
      for (const killed of [false, true]) {
        const home = mkdtempSync(join(tmpdir(), "home-"));
        const launch = await sandbox.wrap({
          file: "bash",
          args: ["-c", `${left} & read -r _`],
          cwd: home,
          env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
          write: [home],
        });
        const child = spawn(launch.file, launch.args, {
          cwd: home,
          env: launch.env,
          detached: true,
        });
        // Its end as an executor takes it: bubblewrap's outer process exited.
        const exited = new Promise((resolve) => child.once("exit", resolve));
        await new Promise((resolve) => child.stdout.once("data", resolve));
        // Bubblewrap, its pid 1, the runtime's relays, the loopback forwarder and the program.
        expect((await processesUnder(home)).length).toBeGreaterThan(3);
        if (killed) process.kill(-(child.pid as number), "SIGKILL");
        else child.stdin.end();
        await exited;
        await launch.release();
        expect(await processesUnder(home)).toEqual([]);
      }
    });

    it("gives each launch its own loopback: two at once hold the same fixed port", {
      timeout: 30_000,
    }, async () => {
      const port = 47_311;
      const [one, two] = [mkdtempSync(join(root, "cwd-")), mkdtempSync(join(root, "cwd-"))];
      // Each holds the port, says so in its own directory, and keeps holding it until it has read
      // the other's word (reads are allowed): both held the port at the same moment.
      const hold = (other: string) =>
        `node -e "require('http').createServer((q,s)=>s.end('mine')).listen(${port},'127.0.0.1',()=>{require('fs').writeFileSync('listening','');const t=setInterval(()=>{if(!require('fs').existsSync('${other}/listening'))return;clearInterval(t);require('http').get('http://127.0.0.1:${port}',r=>{r.pipe(process.stdout);r.on('end',()=>process.exit(0))})},20);setTimeout(()=>{console.log('alone');process.exit(3)},15000)})"`;
      const [a, b] = await Promise.all([
        runIn(sandbox, one, hold(two)),
        runIn(sandbox, two, hold(one)),
      ]);
      expect([a.code, b.code, a.stdout, b.stdout]).toEqual([0, 0, "mine", "mine"]);
    });

    it("exposes a port served inside to the host", async () => {
      const cwd = mkdtempSync(join(root, "cwd-"));
      const port = 47_312;
      const home = mkdtempSync(join(tmpdir(), "home-"));
      const launching = () =>
        sandbox.wrap({
          file: "node",
          args: [
            "-e",
            `require('http').createServer((q,s)=>s.end('served')).listen(${port},'127.0.0.1')`,
          ],
          cwd,
          env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home },
          write: [home],
          expose: port,
        });
      if (!serves) {
        await expect(launching()).rejects.toThrow(/serves: true/);
        return;
      }
      const launch = await launching();
      const child = spawn(launch.file, launch.args, { cwd, env: launch.env, detached: true });
      try {
        const body = await pollUntil(
          () =>
            fetch(`http://127.0.0.1:${launch.exposedPort}/`)
              .then((response) => response.text())
              .catch(() => ""),
          (text) => text === "served",
          200,
        );
        expect(body).toBe("served");
      } finally {
        process.kill(-(child.pid as number), "SIGKILL");
        await launch.release();
      }
    });

    it("lets git work in a worktree but not move the user's branches or write its config", async () => {
      const repo = createGitRepo(join(root, "repo"), { "a.txt": "a\n" });
      const slot = join(root, "slot");
      gitIn(repo, "worktree", "add", "--detach", slot);
      const before = gitIn(repo, "rev-parse", "HEAD");
      const run = await runIn(
        sandbox,
        slot,
        `echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@b commit -qm b && echo committed; git update-ref refs/heads/main HEAD 2>&1; echo moved=$?; echo '[core]' >> ${repo}/.git/config; echo 'echo pwned' > ${repo}/.git/hooks/pre-commit; echo end`,
      );
      expect(run.stdout).toContain("committed");
      expect(run.stdout).toContain("end");
      // git itself would move it (update-ref asks no question of the other worktree): the
      // sandbox is what refuses.
      expect(run.stdout).toMatch(/moved=[1-9]/);
      expect(gitIn(slot, "rev-parse", "HEAD")).not.toBe(before);
      expect(gitIn(repo, "rev-parse", "refs/heads/main")).toBe(before);
      expect(gitIn(repo, "rev-parse", "HEAD")).toBe(before);
      expect(readFileSync(join(repo, ".git", "config"), "utf8")).not.toMatch(/\[core\]\n$/);
      expect(existsSync(join(repo, ".git", "hooks", "pre-commit"))).toBe(false);
    });
  },
);

describe("createSandbox modes", () => {
  it("refuses an unknown mode", () => {
    expect(() => createSandbox({ mode: "maybe" as "auto" })).toThrow(/sandbox mode must be one of/);
  });

  it("off runs launches as they are", async () => {
    const sandbox = createSandbox({ mode: "off" });
    const launch = await sandbox.wrap({ file: "echo", args: ["x"], cwd: tmpdir(), env: {} });
    expect(launch.file).toBe("echo");
    expect(await sandbox.status()).toMatchObject({ confined: false });
  });

  it("required without the runtime is a SandboxUnavailableError; auto says so once and goes on", async () => {
    const path = process.env.PATH;
    // No bubblewrap on PATH: the runtime's own dependency check fails.
    process.env.PATH = mkdtempSync(join(tmpdir(), "empty-path-"));
    try {
      const required = createSandbox({ mode: "required" }).status();
      await expect(required).rejects.toSatisfy(SandboxUnavailableError.isInstance);
      await expect(required).rejects.toThrow(/bubblewrap/);
      const lines: string[] = [];
      const auto = createSandbox({ mode: "auto", onUnconfined: (line) => lines.push(line) });
      const launch = await auto.wrap({ file: "echo", args: ["x"], cwd: tmpdir(), env: {} });
      await auto.wrap({ file: "echo", args: ["y"], cwd: tmpdir(), env: {} });
      expect(launch.file).toBe("echo");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/unconfined: .*install bubblewrap/);
    } finally {
      process.env.PATH = path;
    }
  });
});
