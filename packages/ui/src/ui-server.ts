import { randomBytes, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { applyRunEvent, type RunEventOf } from "@taskledger/core";
import { commitDiff } from "@taskledger/git-workspace";
import type { PageAnswer, ReviewBroker } from "./review-broker.js";
import { RunCatalog } from "./run-catalog.js";
import type { RunLog } from "./run-log.js";
import { detailOf, nodeOf, runViewOf, summaryOf, timelineOf } from "./run-views.js";
import { textLimits } from "./text-limits.js";
import type { RunListView, RunSummaryView, StreamMessage } from "./view.js";

/** The run `taskledger run --ui` is running: the page can answer its reviews and cancel it. */
export interface LiveRun {
  /** Known once the run has started. */
  runId(): string | undefined;
  reviews: ReviewBroker | undefined;
  cancel(): void;
}

export interface UiServerOptions {
  /** The run store's directory (`--store`). */
  store: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default: 32 random bytes. */
  token?: string;
  live?: LiveRun;
}

export interface UiServer {
  /** The page's address with its token: the one URL that opens it. */
  readonly url: string;
  readonly port: number;
  /**
   * Shows what an agent is doing now on the pages of its run (the latest tool call or text). Agent
   * events are not logged, so only the process running the run can tell: `run --ui` passes its own.
   */
  showAgentEvent(event: RunEventOf<"agent-event">): void;
  close(): Promise<void>;
}

const tokenHeader = "x-taskledger-token";
const maxBodyBytes = 4 * 1024 * 1024;
const maxListed = 200;
// A page that reads slower than the run writes is dropped; its EventSource reconnects afresh.
const maxBufferedBytes = 4 * 1024 * 1024;
const assetDirectory = fileURLToPath(new URL("../dist/assets/", import.meta.url));
const assets = {
  "/assets/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/assets/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
} as const;
// How long a request for the live run waits for its first record before it answers 404.
const liveStartMs = 30_000;
// The page's own icon needs no token: it tells nothing, and browsers ask for it without one.
const icons = {
  "/favicon.svg": { file: "icon.svg", type: "image/svg+xml" },
  "/favicon.ico": { file: "icon.svg", type: "image/svg+xml" },
} as const;
// Live agent activity reaches open pages at most this often per run.
const activityEveryMs = 250;

const securityHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
};

/**
 * Serves the page over a store's runs on 127.0.0.1 only. Every request carries the token (the
 * page's URL, then a header; the event stream in its query); a state-changing request is a JSON
 * POST with the token in a header from the page's own origin.
 */
export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const token = options.token ?? randomBytes(32).toString("base64url");
  const expected = Buffer.from(token);
  const catalog = new RunCatalog(options.store);
  const sockets = new Set<Socket>();
  // Each open event stream, with a way to wait until what it was given to send has gone out.
  const streams = new Map<ServerResponse, () => Promise<void>>();
  // Per run: the open streams' updaters, and the sub-tasks whose activity changed since the last.
  const activityWatchers = new Map<string, Set<(ids: Iterable<string>) => void>>();
  const activityChanged = new Map<string, { ids: Set<string>; timer: NodeJS.Timeout }>();
  let port = 0;
  // Set by close(): a request waiting for the live run's first record stops waiting.
  let closing = false;

  const tokenMatches = (given: string | null | undefined) => {
    const buffer = Buffer.from(given ?? "");
    return buffer.length === expected.length && timingSafeEqual(buffer, expected);
  };
  const hosts = () => [`127.0.0.1:${port}`, `localhost:${port}`];

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { error: String((error as Error)?.message ?? error) });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    // A page on another site that rebinds a name to 127.0.0.1 still sends its own Host.
    if (!hosts().includes(req.headers.host ?? "")) return sendJson(res, 403, { error: "bad host" });
    const method = req.method ?? "GET";
    if (method === "GET" && url.pathname in icons)
      return sendAsset(res, icons[url.pathname as keyof typeof icons]);
    if (method === "POST") {
      const refusal = postRefusal(req);
      if (refusal) return sendJson(res, 403, { error: refusal });
    } else if (method === "GET") {
      const given = headerOf(req, tokenHeader) ?? url.searchParams.get("token");
      if (!tokenMatches(given)) return sendJson(res, 403, { error: "a valid token is required" });
    } else {
      return sendJson(res, 405, { error: "method not allowed" });
    }
    const path = url.pathname;
    if (method === "GET" && path === "/") return sendPage(res);
    if (method === "GET" && path in assets)
      return sendAsset(res, assets[path as keyof typeof assets]);
    if (method === "GET" && path === "/api/runs") return sendJson(res, 200, await listRuns());
    const match = /^\/api\/runs\/([^/]+)(\/.*)?$/.exec(path);
    if (!match) return sendJson(res, 404, { error: "not found" });
    const runId = decodeURIComponent(match[1] ?? "");
    const rest = match[2] ?? "";
    if (method === "POST") return handlePost(req, res, runId, rest);
    const log = await logOf(runId, res);
    if (!log) return sendJson(res, 404, { error: `no run "${runId}"` });
    if (rest === "") return sendJson(res, 200, await runView(log));
    if (rest === "/events") return openStream(req, res, log);
    if (rest === "/timeline") return sendJson(res, 200, timelineOf(log, await isActive(log.runId)));
    const commit = /^\/commits\/([0-9a-f]{40})\/diff$/.exec(rest)?.[1];
    if (commit) return sendDiff(res, log, commit);
    const subTask = /^\/sub-tasks\/([^/]+)$/.exec(rest);
    if (subTask) {
      const detail = detailOf(log, decodeURIComponent(subTask[1] ?? ""));
      return detail
        ? sendJson(res, 200, detail)
        : sendJson(res, 404, { error: "no such sub-task" });
    }
    return sendJson(res, 404, { error: "not found" });
  }

  /** An attempt's diff, read from the repository the run logged, for a commit the run logged. */
  async function sendDiff(res: ServerResponse, log: RunLog, commit: string): Promise<void> {
    const workspace = log.state.workspace;
    const logged = [...log.attempts.values()].some((list) => list.some((a) => a.commit === commit));
    if (workspace?.kind !== "worktree" || !logged)
      return sendJson(res, 404, { error: "this run logged no such commit" });
    try {
      return sendJson(res, 200, {
        diff: await commitDiff(workspace.root, commit, textLimits.diff),
      });
    } catch (error) {
      return sendJson(res, 410, {
        error: `the commit cannot be read: ${(error as Error).message}`,
      });
    }
  }

  function postRefusal(req: IncomingMessage): string | undefined {
    if (!tokenMatches(headerOf(req, tokenHeader))) return "a valid token header is required";
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (type !== "application/json") return "the body must be application/json";
    const origin = req.headers.origin;
    if (origin !== undefined && !hosts().some((host) => origin === `http://${host}`))
      return "cross-origin requests are refused";
    const site = headerOf(req, "sec-fetch-site");
    if (site !== undefined && site !== "same-origin") return "cross-site requests are refused";
    return undefined;
  }

  async function handlePost(
    req: IncomingMessage,
    res: ServerResponse,
    runId: string,
    action: string,
  ): Promise<void> {
    const live = options.live;
    if (!live || live.runId() !== runId)
      return sendJson(res, 409, { error: "this page does not run that run" });
    const body = await readJson(req);
    if (body === undefined) return sendJson(res, 400, { error: "the body is not JSON" });
    if (action === "/cancel") {
      live.cancel();
      return sendJson(res, 200, { ok: true });
    }
    if (action === "/review") {
      if (!live.reviews) return sendJson(res, 409, { error: "this run is not reviewed" });
      const result = live.reviews.answer(body as PageAnswer);
      return result.ok
        ? sendJson(res, 200, { ok: true })
        : sendJson(res, result.status, { error: result.error });
    }
    return sendJson(res, 404, { error: "not found" });
  }

  /**
   * The run's log; for the live run, once its first record is in it. The host knows the run, and
   * prints its address, as soon as it has started: a moment before core writes `run-started`
   * (after asking the sandbox for its status, half a second with the OS sandbox on). A request in
   * between waits for that record, bounded, instead of a 404 the page takes as final.
   */
  async function logOf(runId: string, res: ServerResponse): Promise<RunLog | undefined> {
    const deadline = Date.now() + liveStartMs;
    for (;;) {
      const log = await catalog.get(runId);
      if (options.live?.runId() !== runId || log?.startedAt !== undefined || log?.error) return log;
      if (closing || res.destroyed || Date.now() >= deadline) return log;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function isActive(runId: string): Promise<boolean> {
    return options.live?.runId() === runId || (await catalog.isActive(runId));
  }

  // A listed run's summary is kept while its log and its lock are unchanged, so listing a store of
  // large logs reads each one once, not on every visit.
  const summaries = new Map<string, { key: string; view: RunSummaryView }>();

  async function listRuns(): Promise<RunListView> {
    const ids = await catalog.runIds();
    const listed = ids.slice(0, maxListed);
    const runs: RunSummaryView[] = [];
    for (const id of listed) {
      const active = await isActive(id);
      const key = `${await catalog.stamp(id)}:${active}`;
      const cached = summaries.get(id);
      if (cached?.key === key) {
        runs.push(cached.view);
        continue;
      }
      const log = await catalog.get(id);
      if (!log) continue;
      const view = summaryOf(log, active);
      summaries.set(id, { key, view });
      runs.push(view);
    }
    for (const id of summaries.keys()) if (!listed.includes(id)) summaries.delete(id);
    return { runs, live: options.live?.runId(), omitted: Math.max(0, ids.length - maxListed) };
  }

  async function runView(log: RunLog) {
    const live = options.live?.runId() === log.runId;
    return runViewOf(
      log,
      await isActive(log.runId),
      live,
      live ? options.live?.reviews?.pending : undefined,
    );
  }

  async function openStream(req: IncomingMessage, res: ServerResponse, log: RunLog) {
    res.writeHead(200, {
      ...securityHeaders,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
    });
    const send = (message: StreamMessage) => {
      if (res.destroyed) return;
      if (res.writableLength > maxBufferedBytes) return void res.destroy();
      res.write(`data: ${JSON.stringify(message)}\n\n`);
    };
    // Messages go out in order even though building one may wait for the lock file.
    let queue = Promise.resolve();
    const enqueue = (build: () => Promise<StreamMessage>) => {
      queue = queue.then(build).then(send, () => {});
    };
    const snapshot = () => enqueue(async () => ({ type: "snapshot", run: await runView(log) }));
    const update = (ids: Iterable<string>) =>
      enqueue(async () => {
        const nodes = [];
        for (const id of ids) {
          const s = log.state.subTasks.get(id);
          if (s) nodes.push(nodeOf(s));
        }
        const live = options.live?.runId() === log.runId;
        return {
          type: "update",
          summary: summaryOf(log, await isActive(log.runId)),
          nodes,
          review: live ? options.live?.reviews?.pending : undefined,
        };
      });
    streams.set(res, () => queue);
    const watchers = activityWatchers.get(log.runId) ?? new Set();
    activityWatchers.set(log.runId, watchers);
    watchers.add(update);
    snapshot();
    const unsubscribe = catalog.subscribe(log.runId, (change) => {
      if (change.plan) snapshot();
      else if (change.records > 0) update(change.subTasks);
    });
    const unwatchReviews = options.live?.reviews?.onChange(() => update([]));
    const heartbeat = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
    heartbeat.unref();
    req.on("close", () => {
      watchers.delete(update);
      clearInterval(heartbeat);
      unsubscribe();
      unwatchReviews?.();
      streams.delete(res);
    });
  }

  async function sendPage(res: ServerResponse): Promise<void> {
    let html: string;
    try {
      html = await readFile(`${assetDirectory}index.html`, "utf8");
    } catch {
      return sendText(res, 500, "The page's assets are not built: run `npm run build`.");
    }
    // The token is base64url: safe inside an attribute.
    res.writeHead(200, { ...securityHeaders, "content-type": "text/html; charset=utf-8" });
    res.end(html.replaceAll("__TOKEN__", encodeURIComponent(token)));
  }

  async function sendAsset(res: ServerResponse, asset: { file: string; type: string }) {
    let body: Buffer;
    try {
      body = await readFile(`${assetDirectory}${asset.file}`);
    } catch {
      return sendText(res, 404, "not built");
    }
    res.writeHead(200, { ...securityHeaders, "content-type": asset.type });
    res.end(body);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const showAgentEvent = (event: RunEventOf<"agent-event">) => {
    const { runId, subTaskId } = event;
    if (!activityWatchers.get(runId)?.size) return;
    void catalog.get(runId).then(
      (log) => {
        const s = log?.state.subTasks.get(subTaskId);
        if (!log || s?.status !== "running" || s.attempts !== event.attempt) return;
        // The one fold: it sets the sub-task's activity as the terminal's view has it.
        applyRunEvent(log.state, event);
        let pending = activityChanged.get(runId);
        if (!pending) {
          const ids = new Set<string>();
          const timer = setTimeout(() => {
            activityChanged.delete(runId);
            for (const watcher of activityWatchers.get(runId) ?? []) watcher(ids);
          }, activityEveryMs);
          timer.unref();
          pending = { ids, timer };
          activityChanged.set(runId, pending);
        }
        pending.ids.add(subTaskId);
      },
      () => {},
    );
  };

  return {
    url: `http://127.0.0.1:${port}/?token=${encodeURIComponent(token)}`,
    port,
    showAgentEvent,
    close: async () => {
      closing = true;
      for (const { timer } of activityChanged.values()) clearTimeout(timer);
      // A run that just ended reaches its pages before they are closed.
      await catalog.pokeAll();
      await Promise.all([...streams.values()].map((drained) => drained()));
      for (const stream of streams.keys()) stream.end();
      catalog.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...securityHeaders, "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...securityHeaders, "content-type": "text/plain; charset=utf-8" });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}
