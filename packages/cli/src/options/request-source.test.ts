import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { ModelServer } from "@taskledger/testing";
import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";
import { demoPlan } from "../demo/demo-scenario.js";
import { captureIo, compatibleArgs, testScratch } from "../test-support/cli-harness.js";

const scratch = testScratch();

async function setup(): Promise<{ server: ModelServer; dir: string; args: string[] }> {
  const server = await scratch.server({ replies: [{ text: JSON.stringify(demoPlan) }] });
  const dir = await scratch.directory("taskledger-request-");
  return { server, dir, args: [...compatibleArgs(server.openaiBaseURL), "--yes"] };
}

/** A specification of about 200 KB: more than argv takes in one argument (128 KB). */
function longRequest(): string {
  const line = (i: number) =>
    `Requirement ${i}: the greeting library handles case ${i} and its test checks it.\n`;
  const lines: string[] = [];
  for (let i = 0, size = 0; size < 200 * 1024; i++) {
    lines.push(line(i));
    size += line(i).length;
  }
  return `Build the greeting library and test it.\n${lines.join("")}`;
}

/** The user turn of the planning call: what the planner was given. */
/** What the planner was given after the project's digest: the request, as it arrived. */
function plannerSaw(server: ModelServer): string {
  const body = server.requests[0]?.body as { messages: { role: string; content: unknown }[] };
  const user = body.messages.find((m) => m.role === "user")?.content;
  const text = typeof user === "string" ? user : JSON.stringify(user);
  const at = text.indexOf("\n\nRequest:\n");
  return at < 0 ? text : text.slice(at + 2);
}

function stdinWith(text: string | undefined): PassThrough {
  const stdin = new PassThrough();
  if (text !== undefined) stdin.end(text);
  return stdin;
}

describe("taskledger run takes a long request from a file or stdin", () => {
  it("--request-file: 200 KB reach the planner whole", async () => {
    const { server, dir, args } = await setup();
    const request = longRequest();
    await writeFile(join(dir, "request.md"), request);
    const t = captureIo({ cwd: dir });
    const code = await runCli(["run", "--request-file", "request.md", "--dry-run", ...args], t.io);
    expect(code, t.err()).toBe(0);
    expect(request.length).toBeGreaterThan(200 * 1024);
    expect(plannerSaw(server)).toBe(`Request:\n${request.trim()}`);
    expect(t.out()).toContain("Plan: 3 sub-tasks");
  });

  it("-: 200 KB from stdin reach the planner whole", async () => {
    const { server, args } = await setup();
    const request = longRequest();
    const t = captureIo({ stdin: stdinWith(request) });
    const code = await runCli(["run", "-", "--dry-run", ...args], t.io);
    expect(code, t.err()).toBe(0);
    expect(plannerSaw(server)).toBe(`Request:\n${request.trim()}`);
  });

  it("`plan` takes them too", async () => {
    const { server, args } = await setup();
    const t = captureIo({ stdin: stdinWith("Build the greeting library, then test it.") });
    expect(await runCli(["plan", "-", ...args.slice(0, -1)], t.io), t.err()).toBe(0);
    expect(plannerSaw(server)).toBe("Request:\nBuild the greeting library, then test it.");
  });
});

describe("exactly one request, not empty, not too long: else exit 2 and no model call", () => {
  it.each([
    ["words and --request-file", ["run", "do", "it", "--request-file", "request.md"], "not both"],
    ["- and --request-file", ["run", "-", "--request-file", "request.md"], "not both"],
    ["no request at all", ["run"], "no request: give it as words, as - to read it from stdin"],
    ["an empty file", ["run", "--request-file", "empty.md"], "the request is empty"],
    ["a blank stdin", ["run", "-"], "the request is empty (stdin)"],
    ["a file that is not there", ["run", "--request-file", "missing.md"], "cannot read"],
    ["a directory", ["run", "--request-file", "."], "cannot read"],
    ["a file over the limit", ["run", "--request-file", "huge.md"], "the limit is 1000000"],
    ["stdin over the limit", ["run", "-"], "the request (stdin) is too long"],
  ])("%s", async (name, argv, message) => {
    const { server, dir, args } = await setup();
    await writeFile(join(dir, "request.md"), "Build it.");
    await writeFile(join(dir, "empty.md"), " \n\t\n");
    await writeFile(join(dir, "huge.md"), "x".repeat(1_000_001));
    const stdin = name.startsWith("stdin") ? stdinWith("é".repeat(2_000_001)) : stdinWith(" \n \n");
    const t = captureIo({ cwd: dir, stdin });
    expect(await runCli([...argv, ...args], t.io)).toBe(2);
    expect(t.err()).toContain(message);
    expect(server.requests).toHaveLength(0);
  });

  it("Ctrl-C while stdin is still open stops reading: exit 130, no model call", async () => {
    const { server, args } = await setup();
    const stop = new AbortController();
    const stdin = stdinWith(undefined);
    stdin.write("Build the greeting library");
    const t = captureIo({ stdin, signal: stop.signal });
    const exit = runCli(["run", "-", ...args], t.io);
    stop.abort();
    expect(await exit).toBe(130);
    expect(t.err()).toContain("Reading the request (stdin) was cancelled");
    expect(server.requests).toHaveLength(0);
  });
});
