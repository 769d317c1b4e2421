import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createModelServer,
  type ModelServer,
  type RecordedRequest,
  roleOf,
  type ScriptedReply,
  scriptByRole,
  subTaskOf,
} from "@taskledger/testing";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// The page's browser helpers live with the page; shared here rather than copied.
import { browserTests, launchBrowser } from "../../../ui/src/test-support/browser.js";
import { runCli } from "../cli.js";
import type { CliIo } from "../cli-io.js";
import { createDemoReplies, demoRequest } from "../demo/demo-scenario.js";
import {
  captureIo,
  codexArgs,
  processesUnder,
  terminal,
  useCodexKey,
} from "../test-support/cli-harness.js";

const screenshots = process.env.TASKLEDGER_SCREENSHOTS;
const cleanups: (() => Promise<unknown>)[] = [];
let browser: Browser;
// The page is the subject here, not the agent: its runs are on Codex.
useCodexKey();

beforeAll(async () => {
  if (browserTests) browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * The demo's scripted models; with `slowLibrary` the judge of `library` takes a moment longer, and
 * while `hold.agents` is set every agent waits on its model until cancelled.
 */
async function setup(slowLibrary = false, hold = { agents: false }) {
  const replies = createDemoReplies("codex");
  const server: ModelServer = await createModelServer({
    replies: (request: RecordedRequest) => {
      if (hold.agents && roleOf(request) === "agent") return { hang: true };
      const scripted = replies(request);
      const reply = typeof scripted === "function" ? scripted(request) : scripted;
      // The manager's judge, not the agent: a slower answer changes no agent's turns.
      if (slowLibrary && roleOf(request) === "judge" && subTaskOf(request) === "library")
        return { ...reply, delayMs: 1500 } as ScriptedReply;
      return reply;
    },
  });
  const cwd = await mkdtemp(join(tmpdir(), "taskledger-ui-run-"));
  const store = join(cwd, "..", `${cwd.split("/").pop()}-store`);
  await mkdir(store);
  cleanups.push(
    () => server.close(),
    () => rm(cwd, { recursive: true, force: true }),
    () => rm(store, { recursive: true, force: true }),
  );
  const args = [
    "run",
    demoRequest,
    ...codexArgs(server.openaiBaseURL, "demo-agent", "demo-manager"),
    "--cwd",
    cwd,
    "--store",
    store,
    "--ui",
  ];
  return { server, cwd, store, args };
}

/** The page's address once the command prints it. */
async function addressOf(output: () => string): Promise<string> {
  let url: string | undefined;
  for (let i = 0; i < 600 && !url; i++) {
    url = /Follow and steer this run at (\S+)/.exec(output())?.[1];
    if (!url) await new Promise((r) => setTimeout(r, 50));
  }
  expect(url, output()).toBeDefined();
  return url as string;
}

/** Starts the command and opens its page once it prints the address. */
async function start(args: string[], io: CliIo, output: () => string) {
  const exit = runCli(args, io);
  const url = await addressOf(output);
  const page = await browser.newPage({ viewport: { width: 1300, height: 720 } });
  cleanups.push(() => page.close());
  // A demo run on a busy machine takes a while; the test's own timeout bounds it all.
  page.setDefaultTimeout(150_000);
  await page.goto(url);
  return { exit, page };
}

async function statuses(page: Page): Promise<Record<string, string>> {
  return page.$$eval("g.node", (nodes) =>
    Object.fromEntries(
      nodes.map((n) => [n.getAttribute("data-id"), n.getAttribute("data-status")]),
    ),
  );
}

describe.runIf(browserTests)("taskledger run --ui", () => {
  it("colours the nodes as sub-tasks run and finish, live", async () => {
    const { args, store } = await setup(true);
    const t = captureIo();
    const { exit, page } = await start([...args, "--yes"], t.io, t.out);
    await page.locator('g.node[data-id="library"][data-status="running"]').waitFor();
    expect(await statuses(page)).toMatchObject({ tests: "pending", docs: "pending" });
    // What its agent did last shows on the running node (its judge takes a moment here).
    await expect
      .poll(() => page.locator('g.node[data-id="library"] text.activity').textContent(), {
        timeout: 120_000,
      })
      .toMatch(/\S/);
    if (screenshots) await page.screenshot({ path: join(screenshots, "run-running.png") });
    await page.locator('g.node[data-id="library"][data-status="completed"]').waitFor();
    expect(await exit).toBe(0);
    await expect
      .poll(() => statuses(page))
      .toEqual({ library: "completed", tests: "completed", docs: "completed" });
    expect(await page.locator("#connection").textContent()).toBe("run ended");
    // Afterwards `taskledger ui --store` shows it: the retried sub-task has both attempts.
    const stop = new AbortController();
    const u = captureIo({ signal: stop.signal });
    const serving = runCli(["ui", "--store", store], u.io);
    cleanups.push(async () => {
      stop.abort();
      await serving;
    });
    await expect.poll(() => /taskledger ui: (\S+)/.exec(u.out())?.[1]).toBeDefined();
    const later = await browser.newPage({ viewport: { width: 1300, height: 720 } });
    cleanups.push(() => later.close());
    await later.goto(/taskledger ui: (\S+)/.exec(u.out())?.[1] as string);
    await later.locator("table#runs a").first().click();
    await later.locator('g.node[data-id="tests"]').click();
    await expect.poll(() => later.locator("#detail .attempt").count()).toBe(2);
    expect(await later.locator("#detail .attempt summary").first().textContent()).toContain(
      "checks failed",
    );
    if (screenshots) await later.screenshot({ path: join(screenshots, "run-finished.png") });
    stop.abort();
    expect(await serving).toBe(0);
    // Ctrl-C stops the page, and says that is all it stops.
    expect(u.out()).toContain("Stopping the page; no run is cancelled.");
  }, 180_000);

  it("answers for its run from the moment it prints the address, under CI with the sandbox on: the plan, then Approve", async () => {
    const { args } = await setup();
    const t = captureIo();
    expect(t.io.env.CI).toBeDefined();
    const exit = runCli(args, t.io);
    const url = new URL(await addressOf(t.out));
    const runId = url.hash.replace("#/runs/", "");
    const token = url.searchParams.get("token") ?? "";
    const view = () =>
      fetch(`${url.origin}/api/runs/${runId}`, { headers: { "x-taskledger-token": token } });
    // Asked at once: the run is known before its first record is logged (the sandbox's start).
    const first = await view();
    expect(first.status, await first.clone().text()).toBe(200);
    expect(((await first.json()) as { summary: { runId: string } }).summary.runId).toBe(runId);
    await expect
      .poll(async () => ((await (await view()).json()) as { review?: unknown }).review, {
        timeout: 60_000,
      })
      .toMatchObject({ kind: "plan" });
    const page = await browser.newPage({ viewport: { width: 1300, height: 720 } });
    cleanups.push(() => page.close());
    page.setDefaultTimeout(150_000);
    await page.goto(url.href);
    await page.locator('g.node[data-id="library"]').waitFor();
    await page.locator("#approve").click();
    expect(await exit).toBe(0);
    // Confined: the default sandbox was on, not falling back to unconfined agents.
    expect(`${t.out()}${t.err()}`).not.toContain("unconfined");
    await expect
      .poll(() => statuses(page))
      .toEqual({ library: "completed", tests: "completed", docs: "completed" });
  }, 180_000);

  it("runs the plan approved on the page while the terminal asks too: the first answer wins", async () => {
    const { args } = await setup();
    const t = terminal({});
    const { exit, page } = await start(args, t.io, t.screen);
    await page.locator("#review").waitFor();
    expect(t.screen()).toContain("Run this plan? [Y/n/e(dit)]");
    await page.locator("#approve").click();
    expect(await exit).toBe(0);
    expect(t.screen()).toContain("Answered on the page.");
    expect(t.screen()).toMatch(/library\s+completed/);
  }, 180_000);

  it("shows an edit's errors, then runs the plan as edited on the page", async () => {
    const { cwd, args } = await setup();
    const t = captureIo();
    const { exit, page } = await start(args, t.io, t.out);
    const editor = page.locator("#plan-json");
    await editor.waitFor();
    const plan = JSON.parse(await editor.inputValue()) as {
      subTasks: { id: string; dependsOn: string[] }[];
    };
    await editor.fill("{ not json");
    await page.locator("#apply-edit").click();
    await expect.poll(() => page.locator("#review-error").textContent()).toContain("Not JSON");
    plan.subTasks[1]!.dependsOn = ["nowhere"];
    await editor.fill(JSON.stringify(plan));
    await page.locator("#apply-edit").click();
    await expect.poll(() => page.locator("#review-error").textContent()).toContain("nowhere");
    plan.subTasks[1]!.dependsOn = ["library"];
    plan.subTasks = plan.subTasks.filter((s) => s.id !== "docs");
    await editor.fill(JSON.stringify(plan));
    await page.locator("#apply-edit").click();
    expect(await exit).toBe(0);
    expect((await readdir(cwd)).sort()).toEqual(["greet.js", "greet.test.js"]);
  }, 180_000);

  it("runs nothing when the plan is rejected on the page", async () => {
    const { server, args } = await setup();
    const t = captureIo();
    const { exit, page } = await start(args, t.io, t.out);
    await page.locator("#reject-reason").fill("not today");
    await page.locator("#reject").click();
    expect(await exit).toBe(1);
    expect(t.out()).toContain("not today");
    expect(server.requests).toHaveLength(1);
  }, 120_000);

  it("cancels the run from the page once confirmed: exit 130, no agent left; resume --ui serves the resumed run's page", async () => {
    const hold = { agents: false };
    const { cwd, args, store } = await setup(true, hold);
    const t = captureIo();
    const { exit, page } = await start([...args, "--yes", "--json"], t.io, t.err);
    await page.locator('g.node[data-id="library"][data-status="running"]').waitFor();
    await page.locator("#cancel").click();
    await page.locator("#cancel-confirm").click();
    expect(await exit).toBe(130);
    const report = JSON.parse(t.out()) as { status: string; runId: string };
    expect(report.status).toBe("cancelled");
    expect(await processesUnder(cwd)).toEqual([]);

    hold.agents = true;
    const r = captureIo();
    const resumed = await start(
      ["resume", report.runId, "--store", store, "--ui", "--yes", "--json"],
      r.io,
      r.err,
    );
    expect(resumed.page.url()).toContain(`#/runs/${report.runId}`);
    await resumed.page.locator('g.node[data-id="library"][data-status="running"]').waitFor();
    // The cancelled session's report is history: the resumed run is running, and can be cancelled.
    await expect.poll(() => resumed.page.locator("#run-status").textContent()).toBe("running");
    await resumed.page.locator("#cancel").click();
    await resumed.page.locator("#cancel-keep").click();
    await resumed.page.locator("#cancel").click();
    await resumed.page.locator("#cancel-confirm").click();
    expect(await resumed.exit).toBe(130);
    expect(await processesUnder(cwd)).toEqual([]);
  }, 150_000);
});

/** A plan whose one sub-task never passes its judge, so it is replanned into one that does. */
function replanReplies(): (request: RecordedRequest) => ScriptedReply | undefined {
  let plans = 0;
  const sub = (id: string, title: string) => ({
    id,
    title,
    description: `Write notes.txt (${id}).`,
    successCriteria: ["notes.txt exists"],
  });
  return scriptByRole({
    plan: () => ({
      text: JSON.stringify({
        subTasks: [
          plans++ === 0 ? sub("write", "Write the notes") : sub("write-again", "Write them again"),
        ],
      }),
    }),
    judge: (request) => {
      const done = subTaskOf(request) === "write-again";
      return {
        text: JSON.stringify({
          completed: done,
          summary: done ? "Wrote it." : "",
          outputData: "",
          feedback: done ? "" : "The file is missing.",
        }),
      };
    },
    agent: { text: "Working on it." },
  });
}

describe.runIf(browserTests)("taskledger run --ui with a replan", () => {
  it("asks about the replan on the page too, and runs it once approved there", async () => {
    const server = await createModelServer({ replies: replanReplies() });
    const cwd = await mkdtemp(join(tmpdir(), "taskledger-ui-replan-"));
    cleanups.push(
      () => server.close(),
      () => rm(cwd, { recursive: true, force: true }),
    );
    const args = [
      "run",
      "Write notes",
      ...codexArgs(server.openaiBaseURL),
      "--cwd",
      cwd,
      "--max-retries",
      "0",
      "--ui",
    ];
    const t = captureIo();
    const { exit, page } = await start(args, t.io, t.out);
    await page.locator("#approve").click();
    const heading = page.locator("#review h2", { hasText: "A replan waits for review" });
    await heading.waitFor();
    expect(await page.locator("#review").textContent()).toContain("Replaces write");
    expect(await page.locator("#plan-json").inputValue()).toContain("write-again");
    await page.locator("#approve").click();
    expect(await exit).toBe(0);
    await expect
      .poll(() => statuses(page))
      .toEqual({ write: "replaced", "write-again": "completed" });
  }, 180_000);
});

describe("taskledger run --ui, refused", () => {
  it("serves nothing when the command cannot start: a bad port, a missing key", async () => {
    const port = captureIo();
    expect(await runCli(["run", "x", "--ui", "--port", "70000"], port.io)).toBe(2);
    expect(port.err()).toContain("--port must be a whole number from 0 to 65535");
    const key = captureIo({ env: { CI: "true" } });
    expect(await runCli(["run", "x", "--ui", "--provider", "openai"], key.io)).toBe(2);
    expect(key.err()).toContain("OPENAI_API_KEY");
    expect(key.out()).not.toContain("Follow and steer");
  });
});
