import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Fact } from "@taskledger/core";
import { afterEach, describe, expect, it } from "vitest";
import { storeRun, widePlan } from "./test-support/fixture-runs.js";
import { startUiServer, type UiServer } from "./ui-server.js";
import type { RunListView, RunView, StreamMessage, SubTaskDetailView } from "./view.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(store?: string): Promise<{ server: UiServer; store: string; token: string }> {
  const dir = store ?? (await mkdtemp(join(tmpdir(), "taskledger-ui-")));
  if (!store) cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const server = await startUiServer({ store: dir });
  cleanups.push(() => server.close());
  return { server, store: dir, token: new URL(server.url).searchParams.get("token") ?? "" };
}

function origin(server: UiServer): string {
  return new URL(server.url).origin;
}

const onePlan = {
  subTasks: [{ id: "only", title: "Only", description: "d", successCriteria: ["c"] }],
};

describe("the ui server", () => {
  it("binds 127.0.0.1 and prints a URL with a long random token", async () => {
    const { server, token } = await serve();
    expect(new URL(server.url).hostname).toBe("127.0.0.1");
    expect(token.length).toBeGreaterThanOrEqual(40);
    const other = await serve();
    expect(other.token).not.toBe(token);
  });

  it("refuses every request without the token: the page, assets, the API and the event stream", async () => {
    const { server, store } = await serve();
    await storeRun(store, "r", onePlan);
    const [runId] = (await readdir(store)).map((f) => f.replace(/\.jsonl$/, ""));
    const base = origin(server);
    for (const path of [
      "/",
      "/assets/app.js",
      "/api/runs",
      `/api/runs/${runId}`,
      `/api/runs/${runId}/events`,
      `/api/runs/${runId}/sub-tasks/only`,
    ]) {
      const refused = await fetch(`${base}${path}`);
      expect(refused.status, path).toBe(403);
      const wrong = await fetch(`${base}${path}?token=not-the-token`);
      expect(wrong.status, path).toBe(403);
      await refused.text();
      await wrong.text();
    }
    const ok = await fetch(server.url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-security-policy")).toContain("script-src 'self'");
  });

  it("refuses a foreign Host (DNS rebinding) and cross-site or non-JSON POSTs", async () => {
    const { server, token } = await serve();
    const base = origin(server);
    const { request } = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${base}/api/runs?token=${token}`,
        { headers: { host: `evil.example:${server.port}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(403);
    const post = (headers: Record<string, string>, body = "{}") =>
      fetch(`${base}/api/runs/x/cancel`, { method: "POST", headers, body }).then((r) => r.status);
    // The token in the query is not enough for a change: a form or an <img> could carry it.
    expect(await post({ "content-type": "application/json" })).toBe(403);
    expect(await post({ "content-type": "text/plain", "x-taskledger-token": token })).toBe(403);
    expect(
      await post({
        "content-type": "application/json",
        "x-taskledger-token": token,
        origin: "https://evil.example",
      }),
    ).toBe(403);
    // Allowed through, it still changes nothing: this server runs no run.
    expect(await post({ "content-type": "application/json", "x-taskledger-token": token })).toBe(
      409,
    );
    expect(
      await fetch(`${base}/api/runs?token=${token}`, { method: "DELETE" }).then((r) => r.status),
    ).toBe(405);
  });

  it("lists runs with status, done/total and tokens, and never sends the host's settings", async () => {
    const { server, store, token } = await serve();
    await storeRun(
      store,
      "First request",
      onePlan,
      { type: "success" },
      {
        provider: "openai",
        model: "m",
        agentModel: "openai/a",
        opencodeConfig: { provider: { x: { options: { apiKey: "{env:X}" } } } },
        apiKey: "sk-secret-should-never-show",
      },
    );
    const headers = { "x-taskledger-token": token };
    const list = (await (
      await fetch(`${origin(server)}/api/runs`, { headers })
    ).json()) as RunListView;
    expect(list.runs).toHaveLength(1);
    expect(list.runs[0]).toMatchObject({
      request: "First request",
      status: "completed",
      done: 1,
      total: 1,
    });
    const runId = list.runs[0]!.runId;
    const view = await fetch(`${origin(server)}/api/runs/${runId}`, { headers }).then((r) =>
      r.text(),
    );
    expect(view).not.toContain("sk-secret");
    expect(view).not.toContain("opencodeConfig");
    expect((JSON.parse(view) as RunView).models).toEqual({
      manager: "openai/m",
      agent: "openai/a",
    });
  });

  it("sends the facts the plan rests on with the run", async () => {
    const { server, store, token } = await serve();
    const facts: Fact[] = [
      { kind: "given", text: "Tests run with npm test." },
      { kind: "to-look-up", text: "Where the slug helpers live." },
    ];
    await storeRun(store, "With facts", { ...onePlan, facts }, { type: "success" });
    const headers = { "x-taskledger-token": token };
    const list = (await (
      await fetch(`${origin(server)}/api/runs`, { headers })
    ).json()) as RunListView;
    const view = (await fetch(`${origin(server)}/api/runs/${list.runs[0]?.runId}`, {
      headers,
    }).then((r) => r.json())) as RunView;
    expect(view.facts).toEqual(facts);
  });

  it("tells a run a live process holds (its lock) from one whose process is gone", async () => {
    const { server, store, token } = await serve();
    await storeRun(store, "Half done", onePlan);
    const [file] = await readdir(store);
    const path = join(store, file!);
    const runId = file!.replace(/\.jsonl$/, "");
    // The log of a process that died before its run finished.
    const lines = (await readFile(path, "utf8")).trimEnd().split("\n");
    await writeFile(path, `${lines.filter((l) => !l.includes('"run-finished"')).join("\n")}\n`);
    const status = async () => {
      const list = (await (
        await fetch(`${origin(server)}/api/runs`, { headers: { "x-taskledger-token": token } })
      ).json()) as RunListView;
      return list.runs[0]?.status;
    };
    expect(await status()).toBe("stopped");
    await writeFile(join(store, `${runId}.lock`), JSON.stringify({ pid: process.pid }));
    expect(await status()).toBe("running");
  });

  it("answers for the live run once its first record is logged, not 404 before it (the sandbox's start)", async () => {
    const written = await mkdtemp(join(tmpdir(), "taskledger-ui-written-"));
    const store = await mkdtemp(join(tmpdir(), "taskledger-ui-live-"));
    cleanups.push(
      () => rm(written, { recursive: true, force: true }),
      () => rm(store, { recursive: true, force: true }),
    );
    await storeRun(written, "Started", onePlan);
    const [file] = await readdir(written);
    const runId = file!.replace(/\.jsonl$/, "");
    // The host knows the run as soon as it starts; its log is written a moment later.
    const server = await startUiServer({
      store,
      live: { runId: () => runId, reviews: undefined, cancel: () => {} },
    });
    cleanups.push(() => server.close());
    const headers = { "x-taskledger-token": new URL(server.url).searchParams.get("token") ?? "" };
    const asked = fetch(`${origin(server)}/api/runs/${runId}`, { headers });
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(store, file!), await readFile(join(written, file!)));
    const answer = await asked;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as RunView).summary.runId).toBe(runId);
    // Any other id is still answered at once.
    const other = await fetch(`${origin(server)}/api/runs/not-${runId}`, { headers });
    expect(other.status).toBe(404);
    await other.text();
  });

  it("reads a 50 MB log incrementally and sends a bounded snapshot, then only what changes", async () => {
    const { server, store, token } = await serve();
    const huge = "x".repeat(100_000);
    await storeRun(store, "Big", widePlan(200), { type: "success", text: huge });
    const [file] = await readdir(store);
    const path = join(store, file!);
    // Pad the log to 50 MB with records the fold ignores, as long agent texts would.
    const filler = `${JSON.stringify({ v: 2, runId: "x", seq: 0, time: new Date().toISOString(), type: "budget-exhausted", kind: "tokens", limit: 1, used: 1, pad: "y".repeat(1_000_000) })}\n`;
    while ((await stat(path)).size < 50 * 1024 * 1024) await appendFile(path, filler.repeat(5));
    const runId = file!.replace(/\.jsonl$/, "");
    const abort = new AbortController();
    cleanups.push(async () => abort.abort());
    const response = await fetch(`${origin(server)}/api/runs/${runId}/events?token=${token}`, {
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const next = async (): Promise<StreamMessage> => {
      for (;;) {
        const end = text.indexOf("\n\n");
        if (end >= 0) {
          const frame = text.slice(0, end);
          text = text.slice(end + 2);
          if (frame.startsWith("data: ")) return JSON.parse(frame.slice(6)) as StreamMessage;
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("stream ended");
        text += decoder.decode(value, { stream: true });
      }
    };
    const first = await next();
    expect(first.type).toBe("snapshot");
    if (first.type !== "snapshot") return;
    expect(first.run.nodes).toHaveLength(200);
    expect(first.run.summary).toMatchObject({ done: 200, total: 200, status: "completed" });
    expect(JSON.stringify(first).length).toBeLessThan(200_000);
    const detail = (await (
      await fetch(`${origin(server)}/api/runs/${runId}/sub-tasks/s1`, {
        headers: { "x-taskledger-token": token },
      })
    ).json()) as SubTaskDetailView;
    expect(detail.attempts[0]!.finalText.length).toBeLessThanOrEqual(8000);
    // Appended records reach the page as an update of the sub-tasks they touch.
    await appendFile(
      path,
      `${JSON.stringify({ v: 2, runId, seq: 99_999, time: new Date().toISOString(), type: "sub-task-started", subTaskId: "s7", attempt: 2, promptTokens: 1 })}\n`,
    );
    const update = await next();
    expect(update.type).toBe("update");
    if (update.type === "update")
      expect(update.nodes.map((n) => [n.id, n.status])).toEqual([["s7", "running"]]);
  }, 120_000);
});
