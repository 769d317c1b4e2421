// A Node HTTP backend: start runs, stream their events as Server-Sent Events, cancel them.
//
//   POST /runs            {"request": "..."}  → 202 {"runId": "...", "cwd": "..."}
//   GET  /runs/:id/events                    → text/event-stream, every event from the start
//   POST /runs/:id/cancel                    → 202 (409 once the run has ended)
//   GET  /runs/:id                           → 200 the report, or 202 {"status": "running"}
//
// Each run works in a directory of its own under `workRoot`, so two requests never edit the same
// files; it is removed when the run is dropped from memory (past the 100 kept) or the server
// closes, and at once for a request that starts no run. `close()` cancels every run, ends every
// event stream, removes the runs' directories and stops the server.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import type { Manager, RunEvent, RunReport, TaskRun } from "@taskledger/core";
import { InvalidRequestError } from "@taskledger/core";

interface RunEntry {
  cwd: string;
  controller: AbortController;
  events: RunEvent[];
  listeners: Set<(event: RunEvent) => void>;
  done: Promise<unknown>;
  report?: RunReport;
  error?: string;
}

export interface TaskLedgerServerOptions {
  /** Where each run's own working directory is made. */
  workRoot: string;
  /** Largest request body; a bigger one is answered 413. Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface TaskLedgerServer {
  server: Server;
  /** Cancels every run, waits for them to end, closes every stream and stops listening. */
  close(): Promise<void>;
}

// Finished runs kept for late readers; the oldest go first.
const maxRunsKept = 100;

class BodyTooLarge extends Error {}

export function createTaskLedgerServer(
  manager: Manager,
  options: TaskLedgerServerOptions,
): TaskLedgerServer {
  const runs = new Map<string, RunEntry>();
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  let closing = false;

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => json(res, 500, { error: String(error) }));
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const [, head, id, action] = path.split("/");
    if (head !== "runs") return json(res, 404, { error: "not found" });
    if (req.method === "POST" && !id) return start(req, res);
    const entry = id ? runs.get(id) : undefined;
    if (!entry) return json(res, 404, { error: `no run ${id}` });
    if (req.method === "GET" && action === "events") return stream(req, res, entry);
    if (req.method === "POST" && action === "cancel") {
      if (entry.report || entry.error) return json(res, 409, { error: "the run has ended" });
      entry.controller.abort();
      return json(res, 202, { cancelled: true });
    }
    if (req.method === "GET" && !action) {
      if (entry.report) return json(res, 200, entry.report);
      return json(
        res,
        entry.error ? 500 : 202,
        entry.error ? { error: entry.error } : { status: "running" },
      );
    }
    return json(res, 405, { error: "method not allowed" });
  }

  async function start(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (closing) return json(res, 503, { error: "the server is closing" });
    let body: string;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        return json(res, 413, { error: `the body is over ${maxBodyBytes} bytes` });
      }
      throw error;
    }
    let request: unknown;
    try {
      request = (JSON.parse(body) as { request?: unknown } | null)?.request;
    } catch {
      // Answered below, like a body without a string request.
    }
    if (typeof request !== "string") {
      return json(res, 400, { error: 'body must be JSON: {"request": "..."} with a string' });
    }
    const cwd = await mkdtemp(join(options.workRoot, "run-"));
    const controller = new AbortController();
    let run: TaskRun;
    try {
      run = manager.start(request, { cwd, abortSignal: controller.signal });
    } catch (error) {
      await rm(cwd, { recursive: true, force: true });
      if (InvalidRequestError.isInstance(error)) return json(res, 400, { error: error.message });
      throw error;
    }
    const entry: RunEntry = {
      cwd,
      controller,
      events: [],
      listeners: new Set(),
      done: run.result.then(
        (report) => {
          entry.report = report;
        },
        (error: unknown) => {
          entry.error = error instanceof Error ? error.message : String(error);
        },
      ),
    };
    runs.set(run.runId, entry);
    while (runs.size > maxRunsKept) {
      const [oldest, dropped] = runs.entries().next().value as [string, RunEntry];
      runs.delete(oldest);
      dropped.controller.abort();
      void dropped.done.then(() => rm(dropped.cwd, { recursive: true, force: true }));
    }
    run.on("*", (event) => {
      entry.events.push(event);
      for (const listener of entry.listeners) listener(event);
    });
    json(res, 202, { runId: run.runId, cwd });
  }

  function stream(req: IncomingMessage, res: ServerResponse, entry: RunEntry): void {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const write = (event: RunEvent) => {
      res.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
      if (event.type === "run-finished" || event.type === "run-failed") res.end();
    };
    // Replay what happened before the client connected, then follow.
    for (const event of entry.events) write(event);
    if (entry.report || entry.error) return void res.end();
    entry.listeners.add(write);
    req.on("close", () => entry.listeners.delete(write));
  }

  return {
    server,
    async close() {
      closing = true;
      // An open event stream would keep `server.close` waiting: the runs end first, which ends
      // their streams, then whatever connection is left is closed.
      for (const entry of runs.values()) entry.controller.abort();
      await Promise.all([...runs.values()].map((entry) => entry.done));
      await Promise.all(
        [...runs.values()].map((entry) => rm(entry.cwd, { recursive: true, force: true })),
      );
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await stopped;
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    // The rest is left unread; the answer closes the connection.
    if (size > maxBytes) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
