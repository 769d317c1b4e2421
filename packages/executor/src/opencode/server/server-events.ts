import { isObject } from "../../events/json-fields.js";

/** What one event of `opencode serve`'s stream means to the attempt whose session is `sessionId`. */
export type ServerEventMeaning =
  /** A line `opencode run --format json` would have printed for it (see `eventFromJson`). */
  | { kind: "run-event"; value: Record<string, unknown> }
  /** A permission the session (or a sub-agent's session) asks for: `opencode run` rejects it. */
  | { kind: "permission"; requestId: string; permission: string }
  /** A sub-agent session started under the attempt's. */
  | { kind: "child-session"; sessionId: string }
  /** A tool call of the attempt's session began (`opencode run` prints only its end). */
  | { kind: "tool-started"; callId: string; tool: string; input: unknown }
  /** The session went idle: the attempt's turn is over. */
  | { kind: "idle" }
  | { kind: "ignore" };

/**
 * Reads one server event the way `opencode run --format json` does: finished tool calls, step
 * starts and finishes, finished texts and session errors of the attempt's own session become its
 * event lines; its sub-agents' permission requests are answered too.
 */
export function readServerEvent(
  event: unknown,
  sessionId: string,
  sessions: ReadonlySet<string>,
): ServerEventMeaning {
  if (!isObject(event) || typeof event.type !== "string") return { kind: "ignore" };
  const props = isObject(event.properties) ? event.properties : {};
  switch (event.type) {
    case "message.part.updated": {
      const part = isObject(props.part) ? props.part : {};
      if (part.sessionID !== sessionId) return { kind: "ignore" };
      const line = (type: string) => ({
        kind: "run-event" as const,
        value: { type, sessionID: sessionId, part },
      });
      const state = isObject(part.state) ? part.state : {};
      if (part.type === "tool" && (state.status === "completed" || state.status === "error")) {
        return line("tool_use");
      }
      if (part.type === "tool" && state.status === "running" && typeof part.callID === "string") {
        const tool = typeof part.tool === "string" ? part.tool : "unknown";
        return { kind: "tool-started", callId: part.callID, tool, input: state.input };
      }
      if (part.type === "step-start") return line("step_start");
      if (part.type === "step-finish") return line("step_finish");
      if (part.type === "text" && isObject(part.time) && part.time.end !== undefined) {
        return line("text");
      }
      return { kind: "ignore" };
    }
    case "session.error":
      if (props.sessionID !== sessionId || props.error === undefined) return { kind: "ignore" };
      return {
        kind: "run-event",
        value: { type: "error", sessionID: sessionId, error: props.error },
      };
    case "session.status": {
      const status = isObject(props.status) ? props.status : {};
      return props.sessionID === sessionId && status.type === "idle"
        ? { kind: "idle" }
        : { kind: "ignore" };
    }
    case "session.created": {
      const info = isObject(props.info) ? props.info : {};
      return typeof info.id === "string" &&
        typeof info.parentID === "string" &&
        sessions.has(info.parentID)
        ? { kind: "child-session", sessionId: info.id }
        : { kind: "ignore" };
    }
    case "permission.asked":
      return typeof props.id === "string" &&
        typeof props.sessionID === "string" &&
        sessions.has(props.sessionID)
        ? { kind: "permission", requestId: props.id, permission: String(props.permission) }
        : { kind: "ignore" };
    default:
      return { kind: "ignore" };
  }
}
