import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterToolResult, type RecordedRequest, roleOf, scriptByRole } from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import {
  agentArgs,
  captureIo,
  runJson,
  tempRepo,
  testScratch,
} from "../test-support/cli-harness.js";
import { insidePlan, monorepoPackage } from "../test-support/monorepo-fixture.js";
import {
  bashCall,
  completedJudge,
  toolResults,
  writeCall,
} from "../test-support/scripted-replies.js";

// The OS sandbox as a user meets it: the real CLI in process, the real opencode (server executor,
// the default), bubblewrap from Debian, an agent whose script tries every way out.
let other: Server | undefined;
afterEach(() => {
  other?.close();
  other = undefined;
});
const scratch = testScratch();

const judge = completedJudge("Done.");

function shell(command: string) {
  return bashCall(command, "run");
}

/** The pids whose command line holds `word` (Linux `/proc`). */
function processesWith(word: string): number[] {
  return readdirSync("/proc")
    .filter((name) => {
      if (!/^\d+$/.test(name)) return false;
      try {
        return readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes(word);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A process's working directory, or undefined once it is gone. */
function cwdOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/** The tag a sub-task's agent requests carry: its title is in the prompt. */
function taskOf(request: RecordedRequest): string {
  return /Hold port (\w+)/.exec(JSON.stringify(request.body))?.[1] ?? "";
}

describe("taskledger run inside the OS sandbox (real opencode, real bubblewrap)", () => {
  it("refuses every way out of a monorepo package's room, completes the work and reports the refusals", {
    timeout: 180_000,
  }, async () => {
    const { repo, cwd } = monorepoPackage("taskledger-sandbox-run-");
    const home = mkdtempSync(join(tmpdir(), "taskledger-home-"));
    mkdirSync(join(home, ".ssh"));
    writeFileSync(join(home, ".ssh", "id_ed25519"), "PLANTED-PRIVATE-KEY\n");
    const hits: string[] = [];
    other = createServer((req, res) => {
      hits.push(req.url ?? "");
      res.end("other-ok");
    });
    await new Promise<void>((resolve) => other?.listen(0, "127.0.0.1", resolve));
    const otherPort = (other.address() as AddressInfo).port;
    const mark = `${process.pid}-${Date.now()}`;
    const tmpFile = `/tmp/taskledger-escape-${mark}.txt`;
    // Each way out leaves its outcome in a file of the package, which the run applies: the step
    // was tried, and how it ended.
    const script = [
      "echo y > inside.txt",
      '{ echo x > ../../ROOT_CONFIG.txt; } 2> root.txt; echo "rc=$?" >> root.txt',
      `echo x > ${tmpFile}`,
      `echo x > ${home}/escape.txt`,
      `cat ${home}/.ssh/id_ed25519 > stolen.txt`,
      `curl -s -m 5 http://127.0.0.1:${otherPort}/ > other.txt; echo "rc=$?" >> other.txt`,
      'curl -s -m 5 http://example.com/ > web.txt; echo "rc=$?" >> web.txt',
      "true",
    ].join("\n");
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(insidePlan) },
        judge,
        agent: (request) => {
          const results = toolResults(request);
          if (results === 0) return writeCall("tidy.sh", `${script}\n`);
          if (results === 1) return shell("sh tidy.sh");
          return { text: "I wrote inside.txt." };
        },
      }),
    });
    const { code, report, err } = await runJson(
      "Write inside.txt",
      [
        ...agentArgs(server.openaiBaseURL),
        "--cwd",
        cwd,
        "--sandbox",
        "required",
        // The user's own tree: what is above the package is the repository itself, not a slot's
        // copy the run would not apply anyway.
        "--isolation",
        "shared",
      ],
      { env: { CI: "true", HOME: home, PATH: process.env.PATH ?? "" } },
    );
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("y\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
    // The write above the package was tried, and refused.
    expect(readFileSync(join(cwd, "root.txt"), "utf8")).toMatch(
      /Read-only file system[\s\S]*rc=[1-9]/,
    );
    expect(existsSync(tmpFile)).toBe(false);
    expect(existsSync(join(home, "escape.txt"))).toBe(false);
    expect(readFileSync(join(cwd, "stolen.txt"), "utf8")).not.toContain("PLANTED");
    expect(hits).toEqual([]);
    // Both requests were made (each wrote its file) and neither got through: the other local
    // server is not on the room's own loopback, the outside host was refused by the allowlist.
    expect(readFileSync(join(cwd, "other.txt"), "utf8")).toMatch(/^rc=[1-9]\d*\n$/);
    expect(readFileSync(join(cwd, "web.txt"), "utf8")).toMatch(/blocked by network allowlist/);
    const refused = (report.subTasks[0]?.refusals ?? []).map((r) => `${r.kind} ${r.target}`);
    expect(refused).toEqual(
      expect.arrayContaining([
        `write ${tmpFile}`,
        `write ${join(home, "escape.txt")}`,
        "network example.com:80",
      ]),
    );
    expect(err()).toContain("the sandbox refused");
    // The judge was told what the attempt tried.
    const judged = server.requests.filter((r) => roleOf(r) === "judge");
    expect(JSON.stringify(judged.map((r) => r.body))).toContain("Refused by the sandbox");
  });

  it("lets the agent's git see its change from a monorepo package in its slot", {
    timeout: 180_000,
  }, async () => {
    const { cwd } = monorepoPackage("taskledger-sandbox-git-");
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(insidePlan) },
        judge,
        agent: (request) =>
          afterToolResult(request)
            ? { text: "I wrote inside.txt." }
            : shell(
                "echo y > inside.txt; { git status --porcelain; git log --format=log:%s; } > git.txt 2>&1",
              ),
      }),
    });
    // The default isolation: the room is the package in a slot, under the hidden cache directory.
    const { code, report, err } = await runJson("Write inside.txt", [
      ...agentArgs(server.openaiBaseURL),
      "--cwd",
      cwd,
      "--sandbox",
      "required",
    ]);
    expect(code, err()).toBe(0);
    expect(report.status).toBe("completed");
    // Before: "not a git repository (or any parent up to mount point …/packages)".
    const git = readFileSync(join(cwd, "git.txt"), "utf8");
    expect(git).toContain("?? packages/app/inside.txt");
    expect(git).toContain("log:init");
  });

  it("gives parallel agents their own loopback: two sub-tasks holding the same fixed port both complete first try", {
    timeout: 180_000,
  }, async () => {
    const repo = tempRepo("taskledger-sandbox-ports-", { "README.md": "ports\n" });
    const port = 47_431;
    // Each holds the port, says so in its room and keeps holding it until the host, which has
    // seen both say so, lets it go: the two held the port at one moment.
    const marker = `hold-port-${process.pid}-${Date.now()}`;
    const hold = `node -e "const fs=require('fs');require('http').createServer((q,r)=>r.end('ok')).listen(${port},'127.0.0.1',()=>{fs.writeFileSync('listening','');setInterval(()=>{if(!fs.existsSync('release'))return;fs.writeFileSync(process.argv[1],'held while the other held it');process.exit(0)},50);setTimeout(()=>{fs.writeFileSync(process.argv[1],'held alone');process.exit(0)},60000)})" held-$TASK.txt ${marker}`;
    const plan = {
      subTasks: ["one", "two"].map((id) => ({
        id,
        title: `Hold port ${id}`,
        description: `Hold port ${id}`,
        successCriteria: ["held"],
        dependsOn: [],
      })),
    };
    const server = await scratch.server({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge,
        agent: (request) =>
          afterToolResult(request)
            ? {
                text: "I held the port while the other task held it and wrote the file that says so.",
              }
            : shell(
                hold
                  .replace("$TASK", taskOf(request))
                  .replace("$OTHER", taskOf(request) === "one" ? "two" : "one"),
              ),
      }),
    });
    let holding = 0;
    let watch = true;
    const watching = (async () => {
      while (watch) {
        const rooms = new Set<string>();
        for (const pid of processesWith(marker)) {
          const room = cwdOf(pid);
          if (room && existsSync(join(room, "listening"))) rooms.add(room);
        }
        holding = Math.max(holding, rooms.size);
        if (rooms.size === 2) {
          for (const room of rooms) writeFileSync(join(room, "release"), "");
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const { code, report, err } = await runJson("Hold the port twice", [
      ...agentArgs(server.openaiBaseURL),
      "--cwd",
      repo,
      "--concurrency",
      "2",
      "--sandbox",
      "required",
    ]);
    watch = false;
    await watching;
    expect(holding).toBe(2);
    expect(code, err()).toBe(0);
    expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ["one", "completed", 1],
      ["two", "completed", 1],
    ]);
    expect(readFileSync(join(repo, "held-one.txt"), "utf8")).toBe("held while the other held it");
    expect(readFileSync(join(repo, "held-two.txt"), "utf8")).toBe("held while the other held it");
  });

  it("--sandbox required where the runtime cannot work: exit 2 before any model call", async () => {
    const server = await scratch.server({ replies: [] });
    const path = process.env.PATH;
    // No bubblewrap, socat or ripgrep to be found.
    process.env.PATH = mkdtempSync(join(tmpdir(), "taskledger-empty-path-"));
    const t = captureIo();
    try {
      const code = await runCli(
        [
          "run",
          "Anything",
          "--yes",
          ...agentArgs(server.openaiBaseURL),
          "--cwd",
          mkdtempSync(join(tmpdir(), "taskledger-sandbox-none-")),
          "--sandbox",
          "required",
        ],
        t.io,
      );
      expect(code, t.err()).toBe(2);
    } finally {
      process.env.PATH = path;
    }
    expect(t.err()).toMatch(/--sandbox required, but .*bubblewrap/);
    expect(server.requests).toHaveLength(0);
  });
});
