import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  afterToolResult,
  createGitRepo,
  createModelServer,
  type ModelServer,
  type RecordedRequest,
  roleOf,
  scriptByRole,
} from "@taskledger/testing";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import type { JsonReport } from "../output/json-report.js";
import { captureIo, compatibleArgs } from "../test-support/cli-harness.js";
import { compatibleProviderId } from "./runtime.js";

// The OS sandbox as a user meets it: the real CLI in process, the real opencode (server executor,
// the default), bubblewrap from Debian, an agent whose script tries every way out.
let server: ModelServer | undefined;
let other: Server | undefined;
afterEach(async () => {
  await server?.close();
  other?.close();
  server = undefined;
  other = undefined;
});

const judge = {
  text: JSON.stringify({ completed: true, summary: "Done.", outputData: "", feedback: "" }),
};

function shell(command: string) {
  return { toolCalls: [{ name: "bash", arguments: { command, description: "run" } }] };
}

function write(filePath: string, content: string) {
  return { toolCalls: [{ name: "write", arguments: { filePath, content } }] };
}

/** How many tool results the agent's conversation holds so far. */
function toolResults(request: RecordedRequest): number {
  const messages = (request.body as { messages?: { role?: string }[] }).messages ?? [];
  return messages.filter((message) => message.role === "tool").length;
}

/** The tag a sub-task's agent requests carry: its title is in the prompt. */
function taskOf(request: RecordedRequest): string {
  return /Hold port (\w+)/.exec(JSON.stringify(request.body))?.[1] ?? "";
}

describe("taskledger run inside the OS sandbox (real opencode, real bubblewrap)", () => {
  it("refuses every way out of a monorepo package's room, completes the work and reports the refusals", {
    timeout: 180_000,
  }, async () => {
    const repo = createGitRepo(mkdtempSync(join(tmpdir(), "taskledger-sandbox-run-")), {
      "package.json": "{}\n",
      "packages/app/index.js": "app\n",
    });
    const cwd = join(repo, "packages", "app");
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
    const script = [
      "echo y > inside.txt",
      "echo x > ../../ROOT_CONFIG.txt",
      `echo x > ${tmpFile}`,
      `echo x > ${home}/escape.txt`,
      `cat ${home}/.ssh/id_ed25519 > stolen.txt`,
      `curl -s -m 5 http://127.0.0.1:${otherPort}/ > other.txt`,
      "true",
    ].join("\n");
    const plan = {
      subTasks: [
        {
          id: "a",
          title: "Write inside.txt",
          description: "Write inside.txt",
          successCriteria: ["inside.txt exists"],
          dependsOn: [],
        },
      ],
    };
    server = await createModelServer({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge,
        agent: (request) => {
          const results = toolResults(request);
          if (results === 0) return write("tidy.sh", `${script}\n`);
          if (results === 1) return shell("sh tidy.sh");
          return { text: "I wrote inside.txt." };
        },
      }),
    });
    const t = captureIo({ env: { CI: "true", HOME: home, PATH: process.env.PATH ?? "" } });
    const code = await runCli(
      [
        "run",
        "Write inside.txt",
        "--yes",
        "--json",
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        `${compatibleProviderId}/agent`,
        "--cwd",
        cwd,
        "--sandbox",
        "required",
      ],
      t.io,
    );
    const report = JSON.parse(t.out()) as JsonReport;
    expect(code, t.err()).toBe(0);
    expect(report.status).toBe("completed");
    expect(readFileSync(join(cwd, "inside.txt"), "utf8")).toBe("y\n");
    expect(existsSync(join(repo, "ROOT_CONFIG.txt"))).toBe(false);
    expect(existsSync(tmpFile)).toBe(false);
    expect(existsSync(join(home, "escape.txt"))).toBe(false);
    expect(readFileSync(join(cwd, "stolen.txt"), "utf8")).not.toContain("PLANTED");
    expect(hits).toEqual([]);
    const refused = (report.subTasks[0]?.refusals ?? []).map((r) => `${r.kind} ${r.target}`);
    expect(refused).toEqual(
      expect.arrayContaining([`write ${tmpFile}`, `write ${join(home, "escape.txt")}`]),
    );
    expect(t.err()).toContain("the sandbox refused");
    // The judge was told what the attempt tried.
    const judged = server.requests.filter((r) => roleOf(r) === "judge");
    expect(JSON.stringify(judged.map((r) => r.body))).toContain("Refused by the sandbox");
  });

  it("gives parallel agents their own loopback: two sub-tasks holding the same fixed port both complete first try", {
    timeout: 180_000,
  }, async () => {
    const repo = createGitRepo(mkdtempSync(join(tmpdir(), "taskledger-sandbox-ports-")), {
      "README.md": "ports\n",
    });
    const port = 47_431;
    const hold = `node -e "const s=require('http').createServer((q,r)=>r.end('ok')).listen(${port},'127.0.0.1',()=>setTimeout(()=>{s.close();require('fs').writeFileSync(process.argv[1],'held')},3000))" held-$TASK.txt`;
    const plan = {
      subTasks: ["one", "two"].map((id) => ({
        id,
        title: `Hold port ${id}`,
        description: `Hold port ${id}`,
        successCriteria: ["held"],
        dependsOn: [],
      })),
    };
    server = await createModelServer({
      replies: scriptByRole({
        plan: { text: JSON.stringify(plan) },
        judge,
        agent: (request) =>
          afterToolResult(request)
            ? { text: "I held the port for three seconds and wrote the file that says so." }
            : shell(hold.replace("$TASK", taskOf(request))),
      }),
    });
    const t = captureIo();
    const code = await runCli(
      [
        "run",
        "Hold the port twice",
        "--yes",
        "--json",
        ...compatibleArgs(server.openaiBaseURL),
        "--agent-model",
        `${compatibleProviderId}/agent`,
        "--cwd",
        repo,
        "--concurrency",
        "2",
        "--sandbox",
        "required",
      ],
      t.io,
    );
    const report = JSON.parse(t.out()) as JsonReport;
    expect(code, t.err()).toBe(0);
    expect(report.subTasks.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ["one", "completed", 1],
      ["two", "completed", 1],
    ]);
    expect(readFileSync(join(repo, "held-one.txt"), "utf8")).toBe("held");
    expect(readFileSync(join(repo, "held-two.txt"), "utf8")).toBe("held");
  });

  it("--sandbox required where the runtime cannot work: exit 2 before any model call", async () => {
    server = await createModelServer({ replies: [] });
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
          ...compatibleArgs(server.openaiBaseURL),
          "--agent-model",
          `${compatibleProviderId}/agent`,
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
