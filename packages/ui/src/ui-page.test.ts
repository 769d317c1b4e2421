import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManager, emptyUsage, FileRunStore, type TaskRun } from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReviewBroker } from "./review-broker.js";
import { browserTests, launchBrowser } from "./test-support/browser.js";
import { storeGatedRun, storeLimitedRun, storeRun, widePlan } from "./test-support/fixture-runs.js";
import { startUiServer, type UiServer } from "./ui-server.js";

/** The browser's own global, as far as these tests use it (the tests have no DOM types). */
type Browserish = { getComputedStyle(element: unknown): { outlineStyle: string } };

const xssTitle = `<img src=x onerror="window.__xss='title'">`;
const xssOutput = `<script>window.__xss='output'</script><img src=x onerror="window.__xss='img'">`;

let browser: Browser;
let server: UiServer;
let store: string;

beforeAll(async () => {
  if (!browserTests) return;
  browser = await launchBrowser();
  store = await mkdtemp(join(tmpdir(), "taskledger-ui-page-"));
  await storeRun(store, "Build the wide thing", widePlan(200));
  await storeRun(
    store,
    `Fix it ${xssTitle}`,
    {
      subTasks: [
        { id: "evil", title: xssTitle, description: xssOutput, successCriteria: [xssOutput] },
        {
          id: "after",
          title: "After",
          description: "d",
          successCriteria: ["c"],
          dependsOn: ["evil"],
        },
      ],
    },
    (id) =>
      id === "evil" ? { type: "success", text: xssOutput } : { type: "error", error: xssOutput },
  );
  await storeRepoRun(store);
  await storeRun(store, "Titles by width", {
    facts: [
      { kind: "given", text: "<b>Tests</b> run with npm test." },
      { kind: "guess", text: "Titles are cut by width." },
    ],
    subTasks: [
      { id: "narrow", title: "i".repeat(40), description: "d", successCriteria: ["c"] },
      { id: "wide", title: "W".repeat(40), description: "d", successCriteria: ["c"] },
    ],
  });
  await storeTimelineRun(store);
  await storeGatedRun(store);
  await storeLimitedRun(store);
  server = await startUiServer({ store });
}, 60_000);

/**
 * A run with where its time went: `a` waited 400 ms for a worker; `b` waited for `a`, failed on
 * the executor's model and completed escalated to another.
 */
async function storeTimelineRun(store: string): Promise<void> {
  const manager = createManager({
    cwd: process.cwd(),
    store: new FileRunStore(store),
    maxRetries: 1,
    alternateAgentModels: ["openai/strong"],
    executor: {
      async run(_prompt, { subTask, agentModel }) {
        await new Promise((resolve) => setTimeout(resolve, 30));
        const ok = subTask.id === "a" || agentModel === "openai/strong";
        return {
          outcome: ok ? "finished" : "error",
          finalText: ok ? "done" : "",
          toolCalls: [],
          stepFinishReasons: ["stop"],
          filesChanged: [],
          usage: emptyUsage(),
          durationMs: 30,
          ...(ok ? {} : { error: "the model gave up" }),
          ...(subTask.id === "a" ? { details: { waitedForWorkerMs: 400 } } : {}),
        };
      },
    },
  });
  const plan = {
    subTasks: [
      { id: "a", title: "First", description: "d", successCriteria: ["c"] },
      { id: "b", title: "Second", description: "d", successCriteria: ["c"], dependsOn: ["a"] },
    ],
  };
  await manager.run("Timeline run", {
    plan,
    settings: { host: { provider: "openai", model: "m" } },
  });
}

/** A run in a git repository (worktrees) whose agent writes a file holding markup. */
async function storeRepoRun(store: string): Promise<void> {
  const repo = await mkdtemp(join(tmpdir(), "taskledger-ui-repo-"));
  execFileSync("git", ["init", "-q", "-b", "main"], { cwd: repo });
  const manager = createManager({
    store: new FileRunStore(store),
    cwd: repo,
    workspaces: gitWorkspaces(),
    executor: {
      async run(_prompt, { cwd }) {
        await writeFile(join(cwd, "page.html"), `${xssOutput}\n`);
        return {
          outcome: "finished",
          finalText: "wrote page.html",
          toolCalls: [],
          stepFinishReasons: ["stop"],
          filesChanged: [],
          usage: emptyUsage(),
          durationMs: 1,
        };
      },
    },
  });
  const plan = {
    subTasks: [{ id: "web", title: "Write the page", description: "d", successCriteria: ["c"] }],
  };
  await manager.run("Isolated page", { plan });
}

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (store) await rm(store, { recursive: true, force: true });
});

async function open(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("dialog", (dialog) => void dialog.dismiss());
  await page.goto(server.url);
  return page;
}

describe.runIf(browserTests)("the page in a browser", () => {
  it("lists the runs with their request, status and done/total", async () => {
    const page = await open();
    const rows = page.locator("table#runs tbody tr");
    await expect.poll(() => rows.count()).toBe(7);
    const wide = page.locator("tr", { hasText: "Build the wide thing" });
    expect(await wide.locator("td.done").textContent()).toBe("200/200");
    expect(await wide.locator(".badge").textContent()).toBe("completed");
    expect(await wide.locator("[data-slot=cost]").textContent()).toBe("—");
    await page.close();
  });

  it("draws a run of 200 sub-tasks as a laid-out graph and shows a sub-task's attempts", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Build the wide thing" }).click();
    await expect.poll(() => page.locator("g.node").count()).toBe(200);
    expect(await page.locator('g.node[data-status="completed"]').count()).toBe(200);
    expect(await page.locator("#counts").textContent()).toBe("200 completed");
    // Laid out: nodes of later ranks sit further right than the first.
    const x = async (id: string) =>
      (await page.locator(`g.node[data-id="${id}"]`).boundingBox())?.x ?? 0;
    expect(await x("s100")).toBeGreaterThan(await x("s1"));
    await page.locator('g.node[data-id="s1"]').click();
    await expect.poll(() => page.locator("#detail h2").textContent()).toBe("Step 1");
    expect(await page.locator("#detail .attempt summary").first().textContent()).toContain(
      "Attempt 1: finished",
    );
    await page.close();
  });

  it("shows what an agent wrote as text: <script> and <img onerror> never run", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Fix it" }).click();
    await page.locator('g.node[data-id="evil"]').click();
    await expect.poll(() => page.locator("#output-data").textContent()).toContain("<script>");
    await page.locator('g.node[data-id="after"]').click();
    await expect.poll(() => page.locator("#detail .attempt").count()).toBeGreaterThan(0);
    expect(await page.locator("#detail").textContent()).toContain("onerror");
    expect(await page.locator("#detail img, #detail script, #run-header img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: string }).__xss)).toBeUndefined();
    expect(await page.locator("g.node title").first().textContent()).toContain("<img");
    await page.close();
  });

  it("shows an isolated attempt's diff from git, as text", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Isolated page" }).click();
    await page.locator('g.node[data-id="web"]').click();
    await page.locator("button.show-diff").click();
    const diff = page.locator('#detail [data-slot="diff"] pre');
    await expect.poll(() => diff.textContent()).toContain("+++ b/page.html");
    expect(await diff.textContent()).toContain("<script>window.__xss");
    expect(await page.locator("#detail img, #detail script").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: string }).__xss)).toBeUndefined();
    // Only commits the run logged are shown, and only with the token.
    const bogus = await page.evaluate(async () => {
      const href = (globalThis as unknown as { location: { href: string } }).location.href;
      const token = new URL(href).searchParams.get("token") ?? "";
      const runs = (await (
        await fetch("/api/runs", { headers: { "x-taskledger-token": token } })
      ).json()) as { runs: { runId: string }[] };
      const answers: number[] = [];
      for (const run of runs.runs) {
        const path = `/api/runs/${run.runId}/commits/${"0".repeat(40)}/diff`;
        answers.push((await fetch(path, { headers: { "x-taskledger-token": token } })).status);
        answers.push((await fetch(path)).status);
      }
      return answers;
    });
    expect(new Set(bogus)).toEqual(new Set([404, 403]));
    await page.close();
  });

  it("serves its own icon: moving around the page fails no request and logs no error", async () => {
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    page.on("console", (message) => {
      if (message.type() === "error") failed.push(message.text());
    });
    await page.goto(server.url);
    await page.locator("a", { hasText: "Isolated page" }).click();
    await page.locator('g.node[data-id="web"]').waitFor();
    await page.goBack();
    await page.locator("table#runs").waitFor();
    await page.waitForTimeout(300);
    expect(failed).toEqual([]);
    const icon = await page.evaluate(async () =>
      (await fetch("/favicon.ico")).headers.get("content-type"),
    );
    expect(icon).toBe("image/svg+xml");
    await page.close();
  });

  it("keeps the run list live: a run stored after the page opened appears, and the top bar says live", async () => {
    const page = await open();
    const rows = page.locator("table#runs tbody tr");
    await expect.poll(() => rows.count()).toBe(7);
    await storeRun(store, "Arrived later", {
      subTasks: [{ id: "x", title: "X", description: "d", successCriteria: ["c"] }],
    });
    await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(8);
    expect(await page.locator("#connection").textContent()).toBe("live");
    await page.close();
  });

  it("says no such run for an unknown run id, not reconnecting", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}#/runs/no-such-run`);
    await expect.poll(() => page.locator("#no-run").textContent()).toBe("No such run: no-such-run");
    await page.waitForTimeout(300);
    expect(await page.locator("#connection").textContent()).not.toContain("reconnecting");
    await page.close();
  });

  it("shows the facts the plan rests on, as text, open", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Titles by width" }).click();
    const facts = page.locator(".plan-facts li");
    await expect.poll(() => facts.count()).toBe(2);
    expect(await page.locator(".plan-facts").isVisible()).toBe(true);
    expect(await facts.first().isVisible()).toBe(true);
    expect(await facts.first().textContent()).toBe("given: <b>Tests</b> run with npm test.");
    // The fact's own markup is text: each line has only its kind in bold.
    expect(await page.locator(".plan-facts li b").count()).toBe(2);
    await page.close();
  });

  it("fits node titles to their box by width, the full title on hover, and shows one selection outline", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Titles by width" }).click();
    const title = (id: string) => page.locator(`g.node[data-id="${id}"] text.title`);
    await expect.poll(() => title("wide").textContent()).toMatch(/^W+…$/);
    // Forty narrow letters fit: nothing is cut at a fixed count of characters.
    expect(await title("narrow").textContent()).toBe("i".repeat(40));
    const width = await title("wide").evaluate((el) =>
      (el as unknown as { getComputedTextLength(): number }).getComputedTextLength(),
    );
    expect(width).toBeLessThanOrEqual(200);
    expect(await page.locator('g.node[data-id="wide"] title').textContent()).toBe(
      `wide: ${"W".repeat(40)}`,
    );
    const node = page.locator('g.node[data-id="wide"]');
    await node.click();
    expect(await node.getAttribute("class")).toContain("selected");
    expect(
      await node.evaluate(
        (el) => (globalThis as unknown as Browserish).getComputedStyle(el).outlineStyle,
      ),
    ).toBe("none");
    await page.close();
  });

  it("says once, in words, why an attempt is incomplete", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Fix it" }).click();
    await page.locator('g.node[data-id="after"]').click();
    const summary = page.locator("#detail .attempt summary").first();
    await expect
      .poll(() => summary.textContent())
      .toBe("Attempt 1: error · did not finish · 0s · 1000 in · 200 out");
    expect(await page.locator("#detail").textContent()).not.toMatch(/incomplete \(/);
    await page.close();
  });

  it("shows a run as a timeline: a row per sub-task, attempts as bars, escalations and waits visible", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Timeline run" }).click();
    // A run that has ended does not claim to be live.
    await expect.poll(() => page.locator("#connection").textContent()).toBe("run ended");
    await page.locator("#show-timeline").click();
    const row = (id: string) => page.locator(`#timeline g.row[data-id="${id}"]`);
    await expect.poll(() => page.locator("#timeline g.row").count()).toBe(2);
    expect(await row("a").locator("rect.bar").count()).toBe(1);
    expect(await row("a").locator("rect.bar").getAttribute("class")).toBe("bar complete");
    expect(await row("a").locator("rect.wait-worker title").textContent()).toBe(
      "waiting for a worker: 0s",
    );
    const bars = row("b").locator("rect.bar");
    expect(await bars.count()).toBe(3);
    expect(await bars.evaluateAll((els) => els.map((el) => el.getAttribute("class")))).toEqual([
      "bar error",
      "bar error",
      "bar complete escalated",
    ]);
    expect(await bars.last().locator("title").textContent()).toContain(
      "agent model openai/strong (escalated)",
    );
    expect(await row("b").locator("line.wait-deps title").textContent()).toMatch(
      /^waiting for a: /,
    );
    // b ran after a: its first bar starts where a's ends or later.
    const left = async (locator: ReturnType<typeof bars.first>) =>
      (await locator.boundingBox())?.x ?? 0;
    const aBar = row("a").locator("rect.bar");
    const aEnd = (await left(aBar)) + ((await aBar.boundingBox())?.width ?? 0);
    expect(await left(bars.first())).toBeGreaterThanOrEqual(aEnd - 1);
    await page.locator("#show-graph").click();
    expect(await page.locator("#graph").isVisible()).toBe(true);
    await page.close();
  });
});

describe.runIf(browserTests)("the integration gate and the acceptance on the page", () => {
  it("draws the gate's runs and the acceptance as rows of the timeline", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Write A and B, with a README" }).click();
    await page.locator("#show-timeline").click();
    const row = (id: string) => page.locator(`#timeline g.row[data-id="${id}"]`);
    await expect.poll(() => page.locator("#timeline g.row").count()).toBe(4);
    const gate = row("integration").locator("rect.bar");
    expect(await gate.evaluateAll((els) => els.map((el) => el.getAttribute("class")))).toEqual([
      "bar gate incomplete",
      "bar gate complete",
      "bar gate incomplete",
      "bar gate complete",
    ]);
    expect(await gate.first().locator("title").textContent()).toBe(
      "a, b merged: failed npm test, 1s",
    );
    expect(await row("integration").locator("text.row-label").textContent()).toBe(
      "Integration gate",
    );
    const verdict = row("acceptance").locator("rect.bar");
    expect(await verdict.getAttribute("class")).toBe("bar acceptance incomplete");
    expect(await verdict.locator("title").textContent()).toBe(
      "Acceptance, round 1: unsatisfied; missing the README",
    );
    // b's first attempt was sent back: its bar is incomplete.
    expect(
      await row("b")
        .locator("rect.bar")
        .evaluateAll((els) => els.map((el) => el.getAttribute("class"))),
    ).toEqual(["bar incomplete", "bar complete"]);
    await page.close();
  });

  it("shows a merge the gate sent back on the sub-task's panel, with the failing command's output", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Write A and B, with a README" }).click();
    await page.locator('g.node[data-id="b"]').click();
    const first = page.locator("#detail .attempt").first();
    await expect
      .poll(() => first.locator("summary").textContent())
      .toContain("merged, it broke the integration checks");
    expect(await first.locator(".gate-failure h4").textContent()).toBe(
      "Broke the integration checks once merged with a",
    );
    expect(await first.locator(".gate-failure li .code").textContent()).toBe("✗ npm test");
    expect(await first.locator(".gate-failure li pre").textContent()).toBe(
      "exit 1\nAssertionError: expected 2, got 3",
    );
    expect(await page.locator("#detail .attempt").nth(1).locator(".gate-failure").count()).toBe(0);
    await page.close();
  });
});

describe.runIf(browserTests)("a provider's limits on the page", () => {
  it("draws each provider's waits as a row of the timeline and a rate-limited attempt as such", async () => {
    const page = await open();
    await page.locator("a", { hasText: "Write A, B and C under a rate limit" }).click();
    await page.locator("#show-timeline").click();
    const row = (id: string) => page.locator(`#timeline g.row[data-id="${id}"]`);
    await expect.poll(() => page.locator("#timeline g.row").count()).toBe(5);
    const openai = row("waits:openai/gpt-5");
    expect(await openai.locator("text.row-label").textContent()).toBe("Waits: openai/gpt-5");
    const bars = openai.locator("rect.bar");
    expect(await bars.evaluateAll((els) => els.map((el) => el.getAttribute("class")))).toEqual([
      "bar provider-wait rate-limited",
      "bar provider-wait rate-limited",
      "bar provider-wait error",
    ]);
    expect(await bars.first().locator("title").textContent()).toBe(
      "openai rate-limit 429 · a, attempt 1 · waited 12s: Rate limit reached for gpt-5 in organization org-1 on tokens per min",
    );
    expect(await bars.nth(2).locator("title").textContent()).toBe(
      "openai quota 429 · c, attempt 1 · quota exhausted: You exceeded your current quota, please check your plan and billing details",
    );
    expect(await row("waits:anthropic/m").locator("rect.bar title").textContent()).toBe(
      "anthropic overloaded 529 · the manager's call · waited 3s: Overloaded",
    );
    // The pause is drawn from when it was met to its end, over the sub-task's wait.
    const box = await bars.first().boundingBox();
    const later = await row("a").locator("rect.bar").nth(1).boundingBox();
    expect(Math.abs(box!.x + box!.width - later!.x)).toBeLessThan(2);
    expect(
      await row("a")
        .locator("rect.bar")
        .evaluateAll((els) => els.map((el) => el.getAttribute("class"))),
    ).toEqual(["bar rate-limited", "bar complete"]);
    await page.locator("#show-graph").click();
    await page.locator('g.node[data-id="a"]').click();
    const first = page.locator("#detail .attempt").first();
    await expect.poll(() => first.locator("summary").textContent()).toContain("rate-limited");
    expect(await first.locator(".rate-limited h4").textContent()).toBe(
      "Rate-limited by openai (429)",
    );
    expect(await first.locator(".rate-limited pre").textContent()).toBe(
      "Rate limit reached for gpt-5 in organization org-1 on tokens per min",
    );
    expect(await first.locator("pre.error").count()).toBe(0);
    expect(await first.locator("summary").textContent()).not.toContain("incomplete");
    await page.close();
  });
});

describe.runIf(browserTests)("the page of a live run (`run --ui`)", () => {
  it("shows what the agent does now on its node and panel, asks before cancelling, and clears its answer once taken", async () => {
    const liveStore = await mkdtemp(join(tmpdir(), "taskledger-ui-live-"));
    const reviews = new ReviewBroker(10);
    const stop = new AbortController();
    let cancelled = 0;
    let taskRun: TaskRun | undefined;
    const live = await startUiServer({
      store: liveStore,
      live: {
        runId: () => taskRun?.runId,
        reviews,
        cancel: () => {
          cancelled++;
          stop.abort();
        },
      },
    });
    const manager = createManager({
      cwd: process.cwd(),
      store: new FileRunStore(liveStore),
      reviewPlan: reviews.reviewPlan,
      executor: {
        async run(_prompt, { onEvent, abortSignal }) {
          onEvent?.({
            type: "tool-use",
            tool: "write",
            status: "completed",
            input: "notes.txt",
            output: "",
          });
          await new Promise((resolve) =>
            abortSignal.addEventListener("abort", resolve, { once: true }),
          );
          return {
            outcome: "cancelled",
            finalText: "",
            toolCalls: [],
            stepFinishReasons: [],
            filesChanged: [],
            usage: emptyUsage(),
            durationMs: 1,
          };
        },
      },
    });
    taskRun = manager.start("Write notes", {
      abortSignal: stop.signal,
      plan: {
        subTasks: [
          { id: "notes", title: "Write the notes", description: "d", successCriteria: ["c"] },
        ],
      },
    });
    taskRun.on("agent-event", (event) => live.showAgentEvent(event));
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      await page.goto(live.url);
      await page.locator("#approve").click();
      await page.locator('g.node[data-id="notes"][data-status="running"]').waitFor();
      // The answer was taken: nothing says it is still on its way.
      await expect.poll(() => page.locator("#review-slot").textContent()).toBe("");
      const activity = page.locator('g.node[data-id="notes"] text.activity');
      await expect.poll(() => activity.textContent()).toBe("write notes.txt");
      await page.locator('g.node[data-id="notes"]').click();
      await expect.poll(() => page.locator("#activity").textContent()).toBe("Now: write notes.txt");

      await page.locator("#cancel").click();
      await page.locator("#cancel-ask").waitFor();
      await page.locator("#cancel-keep").click();
      await page.locator("#cancel").waitFor();
      expect(cancelled).toBe(0);
      await page.locator("#cancel").click();
      await page.locator("#cancel-confirm").click();
      expect((await taskRun.result).status).toBe("cancelled");
      expect(cancelled).toBe(1);
    } finally {
      stop.abort();
      await taskRun.result.catch(() => {});
      await page.close();
      await live.close();
      await rm(liveStore, { recursive: true, force: true });
    }
  });
});
