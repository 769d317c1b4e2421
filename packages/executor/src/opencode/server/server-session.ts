import type { ExecuteOptions, Pricing } from "@taskledger/core";
import { ProcessGuard, type TrackedProcess, waitForExit } from "@taskledger/process";
import type { ProcessEnd } from "../../agent/attempt-outcome.js";
import type { AttemptSettings } from "../../agent/attempt-settings.js";
import { priceStep } from "../../agent/price-step.js";
import type { Transcript } from "../../agent/transcript.js";
import { eventFromJson, type OpencodeEvent } from "../../events/agent-events.js";
import { clip } from "../../events/clip.js";
import { readOnlyAgent } from "../opencode-config.js";
import type { OpencodeServer } from "./opencode-server.js";
import { readServerEvent } from "./server-events.js";

export interface SessionInput {
  server: OpencodeServer;
  prompt: string;
  options: ExecuteOptions;
  transcript: Transcript;
  settings: AttemptSettings;
  model: string;
  /** Prices each step, as the CLI executor does. */
  pricing: Pricing | undefined;
  title: string;
  /** No event at all (opencode's stream beats every 10 s) for this long means the server hangs. */
  hangMs: number;
  /** Told of the server and each process it starts for the attempt. */
  record: (process: TrackedProcess) => void;
}

// What `opencode run` denies in every session it creates, so nothing waits on a person.
const runRules = ["question", "plan_enter", "plan_exit"].map((permission) => ({
  permission,
  action: "deny" as const,
  pattern: "*",
}));

// A read-only attempt's session refuses every way to change something, besides its agent's own.
const readOnlyRules = ["edit", "bash", "task", "skill"].map((permission) => ({
  permission,
  action: "deny" as const,
  pattern: "*",
}));

/**
 * Runs one attempt as a new session on a running server, in the attempt's directory, and returns
 * how it ended in the terms of the CLI executor (`ProcessEnd`). A server that dies or stops
 * answering ends the attempt with `serverLost` and is killed; the caller replaces it.
 */
export async function runServerSession(input: SessionInput): Promise<ProcessEnd> {
  const { server, options, transcript, settings } = input;
  const end: ProcessEnd = { exitCode: 0, signal: null };
  const connection = new AbortController();
  const client = server.client(options.cwd);
  // The processes the server starts for this attempt (its tools) end with it; the server stays.
  const tools = new ProcessGuard(
    server.pid,
    settings.treePollMs,
    (process) => {
      server.track(process);
      input.record(process);
    },
    {
      leaderStays: true,
      leaderEnded: () => server.ended !== undefined,
      marker: server.marker,
      spare: (process) => server.isOwn(process),
    },
  );
  let sessionId: string | undefined;
  let finish = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });

  let over = false;
  const lost = (message: string) => {
    if (over) return;
    end.serverLost ??= message;
    server.kill();
    // Requests still waiting on the server fail now instead of hanging.
    connection.abort();
    finish();
  };
  const stop = (reason: NonNullable<ProcessEnd["stoppedBy"]>) => {
    if (end.stoppedBy !== undefined) return;
    end.stoppedBy = reason;
    tools.terminate(settings.killGraceMs);
    // An abort that the server does not confirm (idle) in time means it no longer answers.
    const bound = setTimeout(
      () => lost("the opencode server did not end an aborted session"),
      settings.killGraceMs + 10_000,
    );
    bound.unref();
    void finished.then(() => clearTimeout(bound));
    if (sessionId === undefined) finish();
    else
      void client.session
        .abort({ sessionID: sessionId }, { signal: connection.signal })
        .catch(() => {});
  };
  const onAbort = () => stop("abort");
  options.abortSignal.addEventListener("abort", onAbort, { once: true });
  const timeout = setTimeout(() => stop("timeout"), settings.timeoutMs);
  let hang = setTimeout(() => lost(hangMessage(input.hangMs)), input.hangMs);
  const alive = () => {
    clearTimeout(hang);
    hang = setTimeout(() => lost(hangMessage(input.hangMs)), input.hangMs);
  };
  const stopWatchingExit = server.onExit((exit) =>
    lost(
      `the opencode server exited mid-attempt (${exit.signal ? `signal ${exit.signal}` : `code ${exit.exitCode}`})`,
    ),
  );

  // A stream that breaks as the server dies: its exit, if it comes soon, says better what happened
  // (a killed server's exit was seen up to 2 s after its stream closed).
  const streamLost = async (message: string) => {
    await within(server.exited, 10_000);
    lost(message);
  };
  const emit = (event: OpencodeEvent) => {
    transcript.add(event);
    try {
      options.onEvent?.(event);
    } catch {
      // A host listener's fault must not end the attempt.
    }
    if (transcript.stepCount > settings.maxSteps) stop("step-limit");
    else if (transcript.unknownFinishStreak >= settings.maxUnknownFinishes) {
      stop("unknown-finish-loop");
    }
  };
  // A running call is updated many times; the host hears of its start once.
  const startedCalls = new Set<string>();
  const announceTool = (call: { callId: string; tool: string; input: unknown }) => {
    if (startedCalls.has(call.callId) || startedCalls.size >= 10_000) return;
    startedCalls.add(call.callId);
    const input = clip(
      typeof call.input === "string" ? call.input : JSON.stringify(call.input ?? ""),
      1000,
    );
    try {
      options.onEvent?.({ type: "tool-started", tool: call.tool, input });
    } catch {
      // A host listener's fault must not end the attempt.
    }
  };
  const requestFailed = (what: string, error: unknown) => {
    const rejection = configRejectionOf(error);
    if (rejection !== undefined) end.configRejection = rejection;
    else emit({ type: "error", message: `opencode server: ${what} failed: ${describe(error)}` });
  };

  try {
    const events = await client.event.subscribe(
      {},
      { signal: connection.signal, sseMaxRetryAttempts: 1 },
    );
    // The session first: a config opencode refuses is reported here, and nothing runs yet.
    const created = await client.session.create(
      {
        title: input.title,
        permission: input.options.readOnly ? [...runRules, ...readOnlyRules] : runRules,
      },
      { signal: connection.signal },
    );
    if (created.data === undefined) {
      requestFailed("creating the session", created.error);
      finish();
    } else {
      sessionId = created.data.id;
      // The stream connects on its first read: connected before the prompt, it misses nothing.
      const stream = events.stream[Symbol.asyncIterator]();
      const connected = await stream.next();
      if (connected.done) throw new Error("its event stream ended at once");
      alive();
      const sessions = new Set([sessionId]);
      const [providerID = "", ...rest] = input.model.split("/");
      if (options.abortSignal.aborted) onAbort();
      // Stopped while the session was being made: nothing is sent, nothing runs on.
      if (end.stoppedBy !== undefined) finish();
      else {
        const sent = await client.session.promptAsync(
          {
            sessionID: sessionId,
            agent: input.options.readOnly ? readOnlyAgent : settings.agent,
            model: { providerID, modelID: rest.join("/") },
            parts: [{ type: "text", text: input.prompt }],
          },
          { signal: connection.signal },
        );
        if (sent.error !== undefined) {
          requestFailed("sending the prompt", sent.error);
          finish();
        } else if (end.stoppedBy !== undefined) {
          // A stop's abort may have reached the server before the prompt it was meant to end.
          void client.session
            .abort({ sessionID: sessionId }, { signal: connection.signal })
            .catch(() => {});
        }
      }
      const reading = (async () => {
        for (let next = await stream.next(); !next.done; next = await stream.next()) {
          alive();
          const meaning = readServerEvent(next.value, sessionId as string, sessions);
          if (meaning.kind === "run-event") {
            const parsed = eventFromJson(meaning.value, settings.parseLimits);
            if (parsed !== undefined) emit(priceStep(parsed, input.model, input.pricing));
          } else if (meaning.kind === "tool-started") announceTool(meaning);
          else if (meaning.kind === "child-session") sessions.add(meaning.sessionId);
          else if (meaning.kind === "permission") {
            void client.permission
              .reply(
                { requestID: meaning.requestId, reply: "reject" },
                { signal: connection.signal },
              )
              .catch(() => {});
          } else if (meaning.kind === "idle") return;
        }
        if (!connection.signal.aborted) {
          await streamLost("the opencode server closed its event stream");
        }
      })();
      await Promise.race([
        reading.catch((error) => streamLost(`its event stream failed: ${describe(error)}`)),
        finished,
      ]);
    }
  } catch (error) {
    if (end.serverLost === undefined && end.stoppedBy === undefined) {
      lost(`the opencode server did not answer: ${describe(error)}`);
    }
  } finally {
    over = true;
    stopWatchingExit();
    connection.abort();
    clearTimeout(timeout);
    clearTimeout(hang);
    options.abortSignal.removeEventListener("abort", onAbort);
    finish();
    tools.dispose();
    if (end.serverLost !== undefined) {
      await within(server.exited, 10_000);
      // The attempt is over only once its tools are: a kill is delivered some time after it is sent.
      await waitForExit(server.killOrphans(), 5_000);
    }
  }
  return end;
}

/** opencode's `ConfigInvalidError`, worded as `opencode run` prints it. */
function configRejectionOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { name, data } = error as { name?: unknown; data?: { path?: unknown; issues?: unknown } };
  if (name !== "ConfigInvalidError") return undefined;
  const issues = Array.isArray(data?.issues)
    ? (data.issues as { message?: unknown; path?: unknown }[])
    : [];
  const lines = issues.map(
    (issue) =>
      `↳ ${String(issue.message)}${Array.isArray(issue.path) ? ` ${issue.path.join(".")}` : ""}`,
  );
  return clip([`Configuration is invalid at ${String(data?.path)}`, ...lines].join(" "), 2000);
}

/** Waits for `promise`, at most `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

function hangMessage(hangMs: number): string {
  return `the opencode server sent nothing for ${hangMs} ms (it beats every 10 s); it was killed`;
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return JSON.stringify(error).slice(0, 500);
  } catch {
    return String(error);
  }
}
