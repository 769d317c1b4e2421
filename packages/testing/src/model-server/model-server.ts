import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  type Completion,
  type Face,
  faces,
  type ScriptedFinishReason,
  type ScriptedToolCall,
  type ScriptedUsage,
} from "./model-server-faces.js";

export type { Face, ScriptedFinishReason, ScriptedToolCall, ScriptedUsage };

/** A completion to send, in whichever provider's format the request came in. */
export interface ScriptedCompletion {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Default `tool-calls` when there are tool calls, else `stop`. */
  finishReason?: ScriptedFinishReason;
  /** Default: input estimated from the request body, output from the text. */
  usage?: ScriptedUsage;
  /** Wait before answering. */
  delayMs?: number;
  /** Wait between stream frames. */
  chunkDelayMs?: number;
  /** Streaming only: drop the connection after this many frames. */
  disconnectAfterChunks?: number;
}

/** An HTTP error such as a 429 with `retry-after`, a 500 or a 401; the body defaults to the provider's error shape. */
export interface ScriptedHttpError {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** A body sent as it is: truncated JSON, HTML from a proxy, anything. */
export interface ScriptedRawBody {
  rawBody: string;
  status?: number;
  contentType?: string;
}

/** Accept the request and never answer, until the client gives up or the server closes. */
export interface ScriptedHang {
  hang: true;
}

export type ScriptedReply =
  | ScriptedCompletion
  | ScriptedHttpError
  | ScriptedRawBody
  | ScriptedHang
  | ((request: RecordedRequest) => ScriptedReply);

export interface RecordedRequest {
  face: Face;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (or the raw text when it was not JSON). */
  body: unknown;
  stream: boolean;
  model: string | undefined;
}

export interface ModelServerOptions {
  /** A queue, or a function of each request; `undefined` from it is a 500 counted in `unexpected`. */
  replies?: ScriptedReply[] | ((request: RecordedRequest) => ScriptedReply | undefined);
  /** Largest request body accepted; larger ones get a 413. Default 32 MB. */
  maxBodyBytes?: number;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** For the OpenAI SDK (chat completions and `/responses`), OpenAI-compatible clients, opencode and Codex. */
  readonly openaiBaseURL: string;
  /** For the Anthropic SDK, which appends `/v1/messages`. */
  readonly anthropicBaseURL: string;
  /** For @google/genai's `httpOptions.baseUrl`. */
  readonly googleBaseURL: string;
  /** Every model request received, in order. */
  readonly requests: RecordedRequest[];
  /** Requests that arrived with no reply queued; each was answered with a 500. */
  readonly unexpected: number;
  push(...replies: ScriptedReply[]): void;
  close(): Promise<void>;
}

const googlePath = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/**
 * A local HTTP server on 127.0.0.1 that speaks the OpenAI (chat completions and Responses),
 * Anthropic and Gemini wire protocols
 * and answers from a script, so the real provider SDKs and the real opencode CLI can be tested
 * over real HTTP without a network or a key.
 */
export async function createModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  const queue: ScriptedReply[] = Array.isArray(options.replies) ? [...options.replies] : [];
  const replyFor = typeof options.replies === "function" ? options.replies : undefined;
  const maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let unexpected = 0;
  let sequence = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: { message: String(error) } });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    if (req.method === "GET" && /\/models\/?$/.test(path)) {
      // Clients that list models before using one get an answer without using up a reply.
      send(res, 200, {
        object: "list",
        data: [{ id: "scripted", object: "model", owned_by: "taskledger" }],
      });
      return;
    }
    const face = faceOf(req.method, path);
    if (!face) {
      send(res, 404, {
        error: { message: `scripted model server: no route for ${req.method} ${path}` },
      });
      return;
    }
    const raw = await readBody(req, maxBodyBytes);
    if (raw === undefined) {
      send(res, 413, faces[face].errorBody(413, "request body too large"));
      return;
    }
    let body: unknown = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      // Recorded as text; a real provider would answer 400, and so does the script if told to.
    }
    const fields = (typeof body === "object" && body !== null ? body : {}) as Record<
      string,
      unknown
    >;
    const googleMatch = googlePath.exec(path);
    const recorded: RecordedRequest = {
      face,
      method: req.method ?? "POST",
      path: path + url.search,
      headers: req.headers,
      body,
      stream:
        face === "google" ? googleMatch?.[2] === "streamGenerateContent" : fields.stream === true,
      model:
        face === "google"
          ? googleMatch?.[1]
          : typeof fields.model === "string"
            ? fields.model
            : undefined,
    };
    requests.push(recorded);

    let reply = replyFor ? replyFor(recorded) : queue.shift();
    while (typeof reply === "function") reply = reply(recorded);
    if (reply === undefined) {
      unexpected++;
      send(
        res,
        500,
        faces[face].errorBody(500, "scripted model server: no reply queued for this request"),
      );
      return;
    }
    if ("hang" in reply) return;
    if ("rawBody" in reply) {
      res.writeHead(reply.status ?? 200, {
        "content-type": reply.contentType ?? "application/json",
      });
      res.end(reply.rawBody);
      return;
    }
    if ("status" in reply) {
      if (reply.delayMs) await sleep(reply.delayMs);
      send(
        res,
        reply.status,
        reply.body ?? faces[face].errorBody(reply.status, `scripted error ${reply.status}`),
        reply.headers,
      );
      return;
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    const completion = toCompletion(reply, recorded, raw.length, ++sequence);
    if (!recorded.stream) {
      send(res, 200, faces[face].json(completion));
      return;
    }
    const includeUsage =
      (fields.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const frames = faces[face].events(completion, { includeUsage });
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    for (const [index, frame] of frames.entries()) {
      if (reply.disconnectAfterChunks !== undefined && index >= reply.disconnectAfterChunks) {
        res.socket?.destroy();
        return;
      }
      if (res.destroyed) return;
      // Waiting for each write keeps memory flat and makes a later disconnect land after them.
      await new Promise<void>((resolve) => res.write(frame, () => resolve()));
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    }
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: url,
    googleBaseURL: url,
    requests,
    get unexpected() {
      return unexpected;
    },
    push(...replies) {
      queue.push(...replies);
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function faceOf(method: string | undefined, path: string): Face | undefined {
  if (method !== "POST") return undefined;
  if (path.endsWith("/chat/completions")) return "openai";
  if (path.endsWith("/responses")) return "responses";
  if (path.endsWith("/messages")) return "anthropic";
  if (googlePath.test(path)) return "google";
  return undefined;
}

function toCompletion(
  reply: ScriptedCompletion,
  request: RecordedRequest,
  requestBytes: number,
  sequence: number,
): Completion {
  const text = reply.text ?? "";
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${sequence}_${index}`,
    name: call.name,
    arguments:
      typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}),
  }));
  const outputChars = text.length + toolCalls.reduce((n, t) => n + t.arguments.length, 0);
  return {
    id: `scripted-${sequence}`,
    model: request.model ?? "scripted",
    text,
    toolCalls,
    finishReason: reply.finishReason ?? (toolCalls.length > 0 ? "tool-calls" : "stop"),
    usage: {
      inputTokens: reply.usage?.inputTokens ?? Math.ceil(requestBytes / 4),
      outputTokens: reply.usage?.outputTokens ?? Math.max(1, Math.ceil(outputChars / 4)),
      cacheReadTokens: reply.usage?.cacheReadTokens ?? 0,
      cacheWriteTokens: reply.usage?.cacheWriteTokens ?? 0,
    },
  };
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
