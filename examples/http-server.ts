// A Node HTTP backend: start runs, stream their events as Server-Sent Events, cancel them.
//
//   POST /runs            {"request": "..."}  → 202 {"runId": "..."}
//   GET  /runs/:id/events                    → text/event-stream, every event from the start
//   POST /runs/:id/cancel                    → 202
//   GET  /runs/:id                           → 200 the report, or 202 {"status": "running"}
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Manager, RunEvent, RunReport } from "@taskledger/core";
import { InvalidRequestError } from "@taskledger/core";

interface RunEntry {
  controller: AbortController;
  events: RunEvent[];
  listeners: Set<(event: RunEvent) => void>;
  report?: RunReport;
  error?: string;
}

const maxBodyBytes = 1024 * 1024;
// Finished runs kept for late readers; the oldest go first.
const maxRunsKept = 100;

export function createTaskLedgerServer(manager: Manager): Server {
  const runs = new Map<string, RunEntry>();

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
    let request: unknown;
    try {
      request = (JSON.parse(await readBody(req)) as { request?: unknown }).request;
    } catch {
      return json(res, 400, { error: 'body must be JSON: {"request": "..."}' });
    }
    const entry: RunEntry = { controller: new AbortController(), events: [], listeners: new Set() };
    let run: ReturnType<Manager["start"]>;
    try {
      run = manager.start(String(request ?? ""), { abortSignal: entry.controller.signal });
    } catch (error) {
      if (InvalidRequestError.isInstance(error)) return json(res, 400, { error: error.message });
      throw error;
    }
    runs.set(run.runId, entry);
    while (runs.size > maxRunsKept) runs.delete(runs.keys().next().value as string);
    run.on("*", (event) => {
      entry.events.push(event);
      for (const listener of entry.listeners) listener(event);
    });
    run.result.then(
      (report) => {
        entry.report = report;
      },
      (error: unknown) => {
        entry.error = error instanceof Error ? error.message : String(error);
      },
    );
    json(res, 202, { runId: run.runId });
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

  server.on("close", () => {
    for (const entry of runs.values()) entry.controller.abort();
  });
  return server;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
