import { describe, expect, it } from "vitest";
import { readServerEvent } from "./server-events.js";

const own = "ses_own";
const sessions = new Set([own]);
const part = (extra: Record<string, unknown>) => ({
  type: "message.part.updated",
  properties: { part: { sessionID: own, ...extra } },
});

describe("readServerEvent: the server's events as `opencode run --format json` reads them", () => {
  it.each([
    ["a finished tool call", part({ type: "tool", state: { status: "completed" } }), "tool_use"],
    ["a failed tool call", part({ type: "tool", state: { status: "error" } }), "tool_use"],
    ["a step start", part({ type: "step-start" }), "step_start"],
    ["a step finish", part({ type: "step-finish", reason: "stop" }), "step_finish"],
    ["a finished text", part({ type: "text", text: "hi", time: { end: 1 } }), "text"],
  ])("%s is a run event", (_, event, type) => {
    const meaning = readServerEvent(event, own, sessions);
    expect(meaning).toMatchObject({ kind: "run-event", value: { type, sessionID: own } });
  });

  it.each([
    ["a running tool call", part({ type: "tool", state: { status: "running" } })],
    ["a text still streaming", part({ type: "text", text: "h", time: { start: 1 } })],
    [
      "another session's part",
      {
        type: "message.part.updated",
        properties: { part: { sessionID: "x", type: "step-start" } },
      },
    ],
    [
      "another session going idle",
      { type: "session.status", properties: { sessionID: "x", status: { type: "idle" } } },
    ],
    ["a heartbeat", { type: "server.heartbeat", properties: {} }],
    ["not an object", "garbage"],
  ])("%s is ignored", (_, event) => {
    expect(readServerEvent(event, own, sessions)).toEqual({ kind: "ignore" });
  });

  it("a tool call that starts running is told by its call id, with its input", () => {
    const running = part({
      type: "tool",
      callID: "call_1",
      tool: "bash",
      state: { status: "running", input: { command: "npm test" } },
    });
    expect(readServerEvent(running, own, sessions)).toEqual({
      kind: "tool-started",
      callId: "call_1",
      tool: "bash",
      input: { command: "npm test" },
    });
  });

  it("the session's error, its going idle, a sub-agent's session and a permission asked", () => {
    const error = { name: "APIError", data: { message: "boom", statusCode: 500 } };
    expect(
      readServerEvent(
        { type: "session.error", properties: { sessionID: own, error } },
        own,
        sessions,
      ),
    ).toEqual({ kind: "run-event", value: { type: "error", sessionID: own, error } });
    expect(
      readServerEvent(
        { type: "session.status", properties: { sessionID: own, status: { type: "idle" } } },
        own,
        sessions,
      ),
    ).toEqual({ kind: "idle" });
    expect(
      readServerEvent(
        { type: "session.created", properties: { info: { id: "ses_child", parentID: own } } },
        own,
        sessions,
      ),
    ).toEqual({ kind: "child-session", sessionId: "ses_child" });
    expect(
      readServerEvent(
        {
          type: "permission.asked",
          properties: { id: "per_1", sessionID: own, permission: "bash" },
        },
        own,
        sessions,
      ),
    ).toEqual({ kind: "permission", requestId: "per_1", permission: "bash" });
  });
});
