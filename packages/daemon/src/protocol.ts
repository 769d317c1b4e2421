import { createHash } from "node:crypto";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentEvent, AttemptProcess, AttemptResult, ExecuteOptions } from "@taskledger/core";
import type { OpencodeServerExecutorOptions } from "@taskledger/executor";
import type { PriceTable } from "@taskledger/llm";
import type { TrackedProcess } from "@taskledger/process";
import type { SandboxOptions } from "@taskledger/sandbox";

/**
 * Which taskledger a daemon or client is: a daemon of another version or build is replaced, not
 * used. The host (the CLI) says what it is; the daemon reads nothing of its own files.
 */
export interface DaemonBuild {
  version: string;
  build: string;
}

/** The settings one daemon executor is made from: equal settings share its warm servers. */
export interface DaemonExecutorSpec {
  /** The server executor's options, functions left out (`title`; `pricing` travels as `prices`). */
  options: Omit<OpencodeServerExecutorOptions, "title" | "pricing">;
  /** The run's own model prices (`--prices`), priced in the daemon as the CLI would. */
  prices?: PriceTable;
}

/** A sandbox as the CLI made it, so the daemon makes the same one. */
export type DaemonSandboxSpec = Omit<SandboxOptions, "onUnconfined">;

/** What of `ExecuteOptions` crosses to the daemon (no callbacks, signal or sandbox object). */
export type DaemonAttempt = Pick<
  ExecuteOptions,
  "subTask" | "runId" | "attempt" | "cwd" | "agentModel" | "readOnly" | "candidate"
>;

export interface DaemonStatus {
  pid: number;
  version: string;
  build: string;
  startedAt: string;
  idleMs: number;
  socket: string;
  connections: number;
  /** Attempts running now. */
  attempts: number;
  executors: number;
  /** `opencode serve` processes running now, idle or serving. */
  servers: number;
  /** Servers started since the daemon began (a warm room is one not started again). */
  serverStarts: number;
}

/** A message from the CLI to the daemon. */
export type DaemonRequest =
  | ({ type: "hello" } & DaemonBuild)
  | {
      type: "run";
      id: number;
      spec: DaemonExecutorSpec;
      sandbox?: DaemonSandboxSpec;
      prompt: string;
      attempt: DaemonAttempt;
    }
  | { type: "abort"; id: number }
  | { type: "warm"; spec: DaemonExecutorSpec; sandbox?: DaemonSandboxSpec; count: number }
  | { type: "reclaim"; id: number; processes: AttemptProcess[] }
  | { type: "status"; id: number }
  | { type: "stop"; id: number };

/** A message from the daemon to the CLI. */
export type DaemonReply =
  | { type: "hello"; version: string; build: string; pid: number }
  | { type: "event"; id: number; event: AgentEvent }
  | { type: "process"; id: number; process: AttemptProcess }
  | { type: "result"; id: number; result: AttemptResult }
  | {
      type: "failed";
      id: number;
      name: string;
      code?: string;
      message: string;
      retryable?: boolean;
    }
  | { type: "status"; id: number; status: DaemonStatus }
  | {
      type: "done";
      id: number;
      /**
       * To `stop`, once its servers and sandboxes are closed: the daemon itself and every process
       * of its tree, then or when it was asked, for the client to wait on. None to other requests.
       */
      processes?: TrackedProcess[];
    };

// A line past this is not ours: the connection is dropped rather than buffered without end.
const maxLineChars = 64 * 1024 * 1024;

/** Calls `onMessage` for each JSON line read from `socket`; a malformed one ends the connection. */
export function readMessages<T>(socket: Socket, onMessage: (message: T) => void): void {
  let buffered = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    if (buffered.length > maxLineChars) {
      socket.destroy();
      return;
    }
    for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (line.trim() === "") continue;
      let message: T;
      try {
        message = JSON.parse(line) as T;
      } catch {
        socket.destroy();
        return;
      }
      onMessage(message);
    }
  });
}

/** Writes one message as a JSON line; a closed socket drops it. */
export function sendMessage(socket: Socket, message: DaemonRequest | DaemonReply): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(message)}\n`);
}

/** Where a cache directory's daemon listens: inside it, or under the temp directory when too long. */
export function daemonSocketPath(cacheDir: string): string {
  const inside = join(cacheDir, "daemon.sock");
  // A Unix socket's path is limited to about 104 bytes (macOS) / 108 (Linux).
  if (process.platform === "win32") {
    return `\\\\.\\pipe\\taskledger-${createHash("sha256").update(cacheDir).digest("hex").slice(0, 16)}`;
  }
  if (Buffer.byteLength(inside) < 100) return inside;
  const hash = createHash("sha256").update(cacheDir).digest("hex").slice(0, 16);
  return join(tmpdir().length < 60 ? tmpdir() : "/tmp", `taskledger-daemon-${hash}.sock`);
}
