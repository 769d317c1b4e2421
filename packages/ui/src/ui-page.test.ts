import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createManager, emptyUsage, FileRunStore } from "@taskledger/core";
import { gitWorkspaces } from "@taskledger/git-workspace";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserTests, launchBrowser } from "./test-support/browser.js";
import { storeRun, widePlan } from "./test-support/fixture-runs.js";
import { startUiServer, type UiServer } from "./ui-server.js";

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
  server = await startUiServer({ store });
}, 60_000);

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
    await expect.poll(() => rows.count()).toBe(3);
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
});
