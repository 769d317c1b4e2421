import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import type { AttemptResult, ExecuteOptions, Executor } from "@taskledger/core";
import { createSandbox } from "@taskledger/sandbox";
import { pollUntil, type ScriptedReply, type ScriptedToolCall } from "@taskledger/testing";
import { expect } from "vitest";
import type { SuiteServer } from "./suite-agent.js";

/** What the sandbox case needs of the suite it runs in. */
export interface SandboxCaseContext {
  scripted(steps: ScriptedReply[]): { tag: string; server: SuiteServer };
  make(server: SuiteServer): Executor;
  workDir(): Promise<string>;
  runOptions(cwd: string, extra?: Partial<ExecuteOptions>): ExecuteOptions;
  shell(command: string): ScriptedToolCall;
  write(cwd: string, path: string, content: string): ScriptedToolCall;
  cleanups: (() => Promise<unknown>)[];
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

/**
 * One attempt inside the OS sandbox whose own script tries every way out: a write above its
 * monorepo package, to /tmp and to the user's home; a read of a planted key; a request to a
 * second local server and to the internet; a process left running in a new session. Each is
 * refused or absent, the attempt's own work lands, and the refusals are on the result.
 */
export async function sandboxCase(ctx: SandboxCaseContext): Promise<AttemptResult> {
  const repo = await ctx.workDir();
  const cwd = join(repo, "packages", "app");
  await mkdir(cwd, { recursive: true });
  const secrets = join(await ctx.workDir(), "ssh");
  await mkdir(secrets);
  await writeFile(join(secrets, "id_ed25519"), "PLANTED-PRIVATE-KEY\n");
  const hits: string[] = [];
  const other = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.end("other-ok");
  });
  await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
  ctx.cleanups.push(() => new Promise((resolve) => other.close(() => resolve(undefined))));
  const otherPort = (other.address() as AddressInfo).port;
  const mark = `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
  const sleeper = `4${mark.slice(-6)}`;
  const userFile = join(homedir(), `taskledger-escape-${mark}.txt`);
  const tmpFile = `/tmp/taskledger-escape-${mark}.txt`;
  ctx.cleanups.push(() => rm(userFile, { force: true }));
  ctx.cleanups.push(() => rm(tmpFile, { force: true }));
  // A script, as a test or a postinstall would be: no outside path is in the command's own text.
  // Each request leaves its outcome in a file (it was tried); the sleeper is left running, and
  // the script waits (bounded) until the host has seen it alive.
  const script = [
    "echo mine > inside.txt",
    "echo x > ../../ESCAPE.txt",
    `echo x > ${tmpFile}`,
    `echo x > ${userFile}`,
    `cat ${secrets}/id_ed25519 > stolen.txt`,
    `curl -s -m 5 http://127.0.0.1:${otherPort}/ > other.txt; echo "rc=$?" >> other.txt`,
    'curl -s -m 5 http://example.com/ > web.txt; echo "rc=$?" >> web.txt',
    `(setsid sleep ${sleeper} > /dev/null 2>&1 &)`,
    "for i in $(seq 400); do [ -e seen ] && break; sleep 0.05; done",
    "echo done",
  ].join("\n");
  const { tag, server } = ctx.scripted([
    { toolCalls: [ctx.write(cwd, "tidy.sh", `${script}\n`)] },
    { toolCalls: [ctx.shell("sh tidy.sh")] },
    { text: "I wrote inside.txt; the rest was refused." },
  ]);
  const sandbox = createSandbox({
    mode: "required",
    allowHosts: [server.url],
    denyRead: [secrets],
    serves: true,
  });
  ctx.cleanups.push(() => sandbox.close());
  let seen: number[] = [];
  let watch = true;
  const watching = (async () => {
    while (watch && seen.length === 0) {
      seen = await processesWith(sleeper);
      if (seen.length > 0) await writeFile(join(cwd, "seen"), "");
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const result = await ctx
    .make(server)
    .run(`Try to leave ${tag}`, ctx.runOptions(cwd, { sandbox }))
    .finally(() => {
      watch = false;
    });
  await watching;
  expect(await readFile(join(cwd, "inside.txt"), "utf8")).toBe("mine\n");
  expect(existsSync(join(repo, "ESCAPE.txt"))).toBe(false);
  expect(existsSync(tmpFile)).toBe(false);
  expect(existsSync(userFile)).toBe(false);
  expect(await readFile(join(cwd, "stolen.txt"), "utf8").catch(() => "")).not.toContain("PLANTED");
  expect(hits).toEqual([]);
  // Both requests were made and neither got through; the outside host was refused by the
  // sandbox (on the record), not only unreachable from here.
  expect(await readFile(join(cwd, "other.txt"), "utf8")).toMatch(/rc=\d+\n$/);
  expect(await readFile(join(cwd, "other.txt"), "utf8")).not.toContain("other-ok");
  expect(await readFile(join(cwd, "web.txt"), "utf8")).toMatch(/rc=\d+\n$/);
  // The sleeper ran, alive in its own session, before the launch ended.
  expect(seen).not.toEqual([]);
  const left = await pollUntil(
    () => processesWith(sleeper),
    (pids) => pids.length === 0,
    200,
  );
  expect(left).toEqual([]);
  const refused = (result.refusals ?? []).map((r) => `${r.kind} ${r.target}`);
  expect(refused).toContain(`write ${join(repo, "ESCAPE.txt")}`);
  expect(refused).toContain(`write ${userFile}`);
  expect(refused).toContain("network example.com:80");
  return result;
}
