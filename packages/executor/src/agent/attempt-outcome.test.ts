import { describe, expect, it } from "vitest";
import type { OpencodeEvent } from "../events/agent-events.js";
import { decideOutcome, type ProcessEnd } from "./attempt-outcome.js";
import { Transcript } from "./transcript.js";

const usage = (outputTokens: number) => ({
  inputTokens: 10,
  outputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});
const exit0: ProcessEnd = { exitCode: 0, signal: null };
const write: OpencodeEvent = {
  type: "tool-use",
  tool: "write",
  status: "completed",
  input: "{}",
  output: "ok",
  filePath: "a.txt",
};

function transcriptOf(...events: OpencodeEvent[]): Transcript {
  const transcript = new Transcript("/work");
  for (const event of events) transcript.add(event);
  return transcript;
}

describe("decideOutcome", () => {
  it("finished on a stop with an answer", () => {
    const t = transcriptOf(
      { type: "step-start" },
      { type: "text", text: "All done: wrote a.txt" },
      { type: "step-finish", reason: "stop", usage: usage(8) },
    );
    expect(decideOutcome(exit0, t)).toEqual({ outcome: "finished" });
  });

  it("a 401 or 403 from the provider is a refusal no retry fixes; a 500 or 429 is retryable", () => {
    for (const statusCode of [401, 403]) {
      const t = transcriptOf({ type: "error", message: "invalid x-api-key", statusCode });
      expect(decideOutcome({ exitCode: 1, signal: null }, t, "claude-code")).toEqual({
        outcome: "error",
        error: `claude-code's model provider refused its credentials (status ${statusCode}): invalid x-api-key; check the agent's key, login and endpoint`,
        retryable: false,
      });
    }
    for (const statusCode of [429, 500]) {
      const t = transcriptOf({ type: "error", message: "busy", statusCode });
      expect(decideOutcome({ exitCode: 1, signal: null }, t).retryable).toBeUndefined();
    }
  });

  it("rate-limited on a provider's limit after the agent's retries, naming its provider; never final", () => {
    const t = transcriptOf({
      type: "error",
      message: "scripted error 429",
      statusCode: 429,
      errorType: "rate_limit_exceeded",
      retryAfterMs: 10,
    });
    expect(decideOutcome({ exitCode: 1, signal: null }, t, "opencode", false, "openai")).toEqual({
      outcome: "rate-limited",
      error:
        "opencode's model provider (openai) is rate-limiting (status 429, retry after 10 ms): scripted error 429",
      limit: {
        kind: "rate-limit",
        provider: "openai",
        statusCode: 429,
        retryAfterMs: 10,
        message: "scripted error 429",
      },
    });
    const quota = transcriptOf({
      type: "error",
      message: "Quota exceeded. Check your plan and billing details.",
    });
    expect(decideOutcome({ exitCode: 1, signal: null }, quota, "codex")).toMatchObject({
      outcome: "rate-limited",
      limit: { kind: "quota" },
    });
    // The executor's own stops come first: a timeout is a timeout whatever the provider said.
    expect(decideOutcome({ exitCode: null, signal: null, stoppedBy: "timeout" }, t).outcome).toBe(
      "timeout",
    );
  });

  it("truncated on length, and on a 2-token stop that says nothing after tool use", () => {
    const length = transcriptOf({ type: "step-finish", reason: "length", usage: usage(100) });
    expect(decideOutcome(exit0, length).outcome).toBe("truncated");
    const tiny = transcriptOf(
      { type: "step-start" },
      write,
      { type: "step-finish", reason: "tool-calls", usage: usage(30) },
      { type: "step-start" },
      { type: "step-finish", reason: "stop", usage: usage(2) },
    );
    expect(decideOutcome(exit0, tiny).outcome).toBe("truncated");
    // A short final answer after tool use is a finished turn: the evaluator judges the work.
    const done = transcriptOf(
      { type: "step-start" },
      write,
      { type: "step-finish", reason: "tool-calls", usage: usage(30) },
      { type: "step-start" },
      { type: "text", text: "Done." },
      { type: "step-finish", reason: "stop", usage: usage(2) },
    );
    expect(decideOutcome(exit0, done)).toEqual({ outcome: "finished" });
    // A short stop with no tool use before it is a plain short answer.
    const short = transcriptOf({ type: "step-finish", reason: "stop", usage: usage(2) });
    expect(decideOutcome(exit0, short).outcome).toBe("finished");
  });

  it("error on error events, exit codes, signals, rejected permissions and no step", () => {
    const ok = transcriptOf({ type: "step-finish", reason: "stop", usage: usage(9) });
    expect(decideOutcome({ exitCode: 1, signal: null }, ok).outcome).toBe("error");
    expect(decideOutcome({ exitCode: null, signal: "SIGSEGV" }, ok).error).toContain("SIGSEGV");
    // Lost or killed from outside: not the agent's doing, so not judged; its own errors are.
    for (const end of [
      { exitCode: null, signal: "SIGKILL" },
      { exitCode: null, signal: null, spawnError: "spawn opencode ENOENT" },
      { exitCode: null, signal: null, serverLost: "the opencode server died" },
    ])
      expect(decideOutcome(end, ok).infrastructureError).toBe(true);
    expect(decideOutcome({ exitCode: 1, signal: null }, ok).infrastructureError).toBeUndefined();
    const failed = transcriptOf({ type: "error", message: "boom", statusCode: 500 });
    expect(decideOutcome(exit0, failed)).toEqual({ outcome: "error", error: "boom (status 500)" });
    const rejected = transcriptOf(
      {
        ...write,
        tool: "bash",
        status: "error",
        error: "The user rejected permission to use this specific tool call.",
      },
      { type: "step-finish", reason: "stop", usage: usage(9) },
    );
    expect(decideOutcome(exit0, rejected).outcome).toBe("error");
    expect(decideOutcome(exit0, transcriptOf()).outcome).toBe("error");
  });

  it("the executor's own stops come first", () => {
    const ok = transcriptOf({ type: "step-finish", reason: "stop", usage: usage(9) });
    const stopped = (stoppedBy: ProcessEnd["stoppedBy"]) =>
      decideOutcome({ exitCode: null, signal: "SIGTERM", stoppedBy }, ok).outcome;
    expect(stopped("abort")).toBe("cancelled");
    expect(stopped("timeout")).toBe("timeout");
    expect(stopped("step-limit")).toBe("error");
    expect(stopped("unknown-finish-loop")).toBe("error");
  });

  it("a non-zero exit says what opencode wrote; a config it refused is not retryable", () => {
    const refused = {
      exitCode: 1,
      signal: null,
      stderr: "\u001b[91mError: \u001b[0mConfiguration is invalid at x.json\n↳ Expected boolean\n",
    };
    expect(decideOutcome(refused, transcriptOf())).toEqual({
      outcome: "error",
      error: "opencode rejected its config: Configuration is invalid at x.json ↳ Expected boolean",
      retryable: false,
    });
    const other = { exitCode: 1, signal: null, stderr: "Error: Model not found: a/b\n" };
    expect(decideOutcome(other, transcriptOf())).toEqual({
      outcome: "error",
      error: "opencode exited with code 1: Model not found: a/b",
    });
    expect(decideOutcome({ exitCode: 2, signal: null, stderr: "noise" }, transcriptOf())).toEqual({
      outcome: "error",
      error: "opencode exited with code 2",
    });
  });
});
