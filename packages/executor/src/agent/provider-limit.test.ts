import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ClaudeCodeTranslator } from "../claude-code/claude-code-events.js";
import { CodexTranslator } from "../codex/codex-events.js";
import { type OpencodeEvent, parseOpencodeEvents } from "../events/agent-events.js";
import { translateJsonLines } from "../events/agent-json-lines.js";
import { describeProviderLimit, providerLimit } from "./provider-limit.js";
import { retryAfterMsOf } from "./retry-after.js";

// Lines the real agents printed (opencode 1.18.33, Claude Code 2.1.328, Codex 0.169.0) when the
// scripted server answered 429, 529, an overloaded 503 or a quota error, trimmed to what is read.
const quotaBody =
  '{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}';
const overloadedBody =
  '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}';
const opencodeError = (message: string, statusCode: number, body: string, headers: object) =>
  JSON.stringify({
    type: "error",
    sessionID: "ses_1",
    error: {
      name: "APIError",
      data: {
        message,
        statusCode,
        isRetryable: true,
        responseHeaders: { "content-type": "application/json", ...headers },
        responseBody: body,
        metadata: { url: "http://127.0.0.1:43371/v1/chat/completions" },
      },
    },
  });
const claudeResult = (result: string, status: number, type: string) => ({
  type: "result",
  subtype: "success",
  is_error: true,
  terminal_reason: "api_error",
  api_error_status: status,
  api_error_type: type,
  result,
});
const codexFailed = (message: string) => [
  { type: "turn.started" },
  { type: "error", message },
  { type: "turn.failed", error: { message } },
];

async function lastError(
  lines: unknown[],
  agent: "opencode" | "claude-code" | "codex",
): Promise<OpencodeEvent | undefined> {
  const text = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
  const source = Readable.from([Buffer.from(text)]);
  const events =
    agent === "opencode"
      ? parseOpencodeEvents(source)
      : translateJsonLines(
          source,
          1024 * 1024,
          agent === "codex" ? new CodexTranslator() : new ClaudeCodeTranslator(),
        );
  let last: OpencodeEvent | undefined;
  for await (const event of events) if (event.type === "error") last = event;
  return last;
}

const cases: {
  name: string;
  agent: "opencode" | "claude-code" | "codex";
  lines: unknown[];
  expected: { kind: string; statusCode?: number; retryAfterMs?: number; message: string } | null;
}[] = [
  {
    name: "opencode 429 with retry-after-ms",
    agent: "opencode",
    lines: [
      opencodeError(
        "scripted error 429",
        429,
        '{"error":{"message":"scripted error 429","type":"rate_limit_exceeded","param":null,"code":"rate_limit_exceeded"}}',
        { "retry-after": "0", "retry-after-ms": "10" },
      ),
    ],
    expected: {
      kind: "rate-limit",
      statusCode: 429,
      retryAfterMs: 10,
      message: "scripted error 429",
    },
  },
  {
    name: "opencode 429 with retry-after in seconds",
    agent: "opencode",
    lines: [opencodeError("scripted error 429", 429, "{}", { "retry-after": "1" })],
    expected: {
      kind: "rate-limit",
      statusCode: 429,
      retryAfterMs: 1000,
      message: "scripted error 429",
    },
  },
  {
    name: "opencode insufficient_quota",
    agent: "opencode",
    lines: [
      opencodeError(
        "You exceeded your current quota, please check your plan and billing details.",
        429,
        quotaBody,
        { "retry-after-ms": "10" },
      ),
    ],
    expected: {
      kind: "quota",
      statusCode: 429,
      retryAfterMs: 10,
      message: "You exceeded your current quota, please check your plan and billing details.",
    },
  },
  {
    name: "opencode 529",
    agent: "opencode",
    lines: [opencodeError("Overloaded", 529, overloadedBody, {})],
    expected: { kind: "overloaded", statusCode: 529, message: "Overloaded" },
  },
  {
    name: "opencode overloaded 503",
    agent: "opencode",
    lines: [opencodeError("Overloaded", 503, overloadedBody, {})],
    expected: { kind: "overloaded", statusCode: 503, message: "Overloaded" },
  },
  {
    name: "opencode plain 500",
    agent: "opencode",
    lines: [opencodeError("scripted error 500", 500, "{}", {})],
    expected: null,
  },
  {
    name: "Claude Code 429",
    agent: "claude-code",
    lines: [
      claudeResult(
        "API Error: Request rejected (429) · scripted error 429",
        429,
        "rate_limit_error",
      ),
    ],
    expected: {
      kind: "rate-limit",
      statusCode: 429,
      message: "API Error: Request rejected (429) · scripted error 429",
    },
  },
  {
    name: "Claude Code insufficient_quota through a gateway",
    agent: "claude-code",
    lines: [
      claudeResult(
        "API Error: Request rejected (429) · You exceeded your current quota, please check your plan and billing details.",
        429,
        "insufficient_quota",
      ),
    ],
    expected: {
      kind: "quota",
      statusCode: 429,
      message:
        "API Error: Request rejected (429) · You exceeded your current quota, please check your plan and billing details.",
    },
  },
  {
    name: "Claude Code 529",
    agent: "claude-code",
    lines: [
      claudeResult(
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:40383).",
        529,
        "overloaded_error",
      ),
    ],
    expected: {
      kind: "overloaded",
      statusCode: 529,
      message:
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:40383).",
    },
  },
  {
    name: "Claude Code overloaded 503",
    agent: "claude-code",
    lines: [claudeResult("API Error: 503 Overloaded. …", 503, "overloaded_error")],
    expected: { kind: "overloaded", statusCode: 503, message: "API Error: 503 Overloaded. …" },
  },
  {
    name: "Claude Code's credit balance (a 400)",
    agent: "claude-code",
    lines: [claudeResult("Credit balance is too low", 400, "invalid_request_error")],
    expected: { kind: "quota", statusCode: 400, message: "Credit balance is too low" },
  },
  {
    name: "Claude Code usage_limit_reached",
    agent: "claude-code",
    lines: [
      claudeResult(
        "API Error: Request rejected (429) · The usage limit has been reached",
        429,
        "usage_limit_reached",
      ),
    ],
    expected: {
      kind: "quota",
      statusCode: 429,
      message: "API Error: Request rejected (429) · The usage limit has been reached",
    },
  },
  {
    name: "Codex 429 after its retries",
    agent: "codex",
    lines: codexFailed("exceeded retry limit, last status: 429 Too Many Requests"),
    expected: {
      kind: "rate-limit",
      statusCode: 429,
      message: "exceeded retry limit, last status: 429 Too Many Requests",
    },
  },
  {
    name: "Codex insufficient_quota",
    agent: "codex",
    lines: codexFailed("Quota exceeded. Check your plan and billing details."),
    expected: { kind: "quota", message: "Quota exceeded. Check your plan and billing details." },
  },
  {
    name: "Codex 529",
    agent: "codex",
    lines: codexFailed(
      "unexpected status 529 <unknown status code>: Overloaded, url: http://127.0.0.1:37983/v1/responses",
    ),
    expected: {
      kind: "overloaded",
      statusCode: 529,
      message:
        "unexpected status 529 <unknown status code>: Overloaded, url: http://127.0.0.1:37983/v1/responses",
    },
  },
  {
    name: "Codex overloaded 503",
    agent: "codex",
    lines: codexFailed(
      "unexpected status 503 Service Unavailable: Overloaded, url: http://127.0.0.1:41393/v1/responses",
    ),
    expected: {
      kind: "overloaded",
      statusCode: 503,
      message:
        "unexpected status 503 Service Unavailable: Overloaded, url: http://127.0.0.1:41393/v1/responses",
    },
  },
  {
    name: "Codex's ChatGPT usage limit",
    agent: "codex",
    lines: codexFailed(
      "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 12:46 PM.",
    ),
    expected: {
      kind: "quota",
      message:
        "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 12:46 PM.",
    },
  },
];

describe("providerLimit, on what the real agents print", () => {
  for (const { name, agent, lines, expected } of cases) {
    it(name, async () => {
      const error = await lastError(lines, agent);
      expect(error?.type).toBe("error");
      const limit = providerLimit(error as Extract<OpencodeEvent, { type: "error" }>, "p");
      if (expected === null) expect(limit).toBeUndefined();
      else expect(limit).toEqual({ provider: "p", ...expected });
    });
  }
});

describe("providerLimit", () => {
  it("is no limit for a refused key, a plain server error or a rate-limit message with a 500", () => {
    expect(providerLimit({ message: "Rate limit reached", statusCode: 401 })).toBeUndefined();
    expect(providerLimit({ message: "insufficient_quota", statusCode: 403 })).toBeUndefined();
    expect(providerLimit({ message: "Internal error", statusCode: 500 })).toBeUndefined();
    expect(providerLimit({ message: "the model is at capacity", statusCode: 500 })).toBeUndefined();
  });

  it("reads OpenAI's own rate-limit message (its billing link too) as a rate limit, not a quota", () => {
    const message =
      "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/billing to add a payment method.";
    const limit = providerLimit({ message, statusCode: 429, errorType: "rate_limit_exceeded" });
    expect(limit?.kind).toBe("rate-limit");
  });

  it("takes Claude's subscription reset time as the wait", () => {
    const now = 1_700_000_000_000;
    const limit = providerLimit(
      { message: "Claude AI usage limit reached|1700003600" },
      undefined,
      now,
    );
    expect(limit).toMatchObject({ kind: "quota", retryAfterMs: 3_600_000 });
  });

  it("keeps the message to one bounded line with keys redacted", () => {
    const message = `Rate limit\nfor key sk-abcdefghijklmnop at https://x.test/v1?key=AIzaSECRET&b=1 ${"x".repeat(2000)}`;
    const limit = providerLimit({ message, statusCode: 429 });
    expect(limit?.message).not.toMatch(/\n|sk-abc|AIzaSECRET/);
    expect(limit?.message).toContain("key [redacted] at https://x.test/v1?key=[redacted]&b=1");
    expect(limit?.message.length).toBeLessThanOrEqual(500);
  });

  it("says what happened in one line", () => {
    const limit = providerLimit(
      { message: "slow down", statusCode: 429, retryAfterMs: 2000 },
      "anthropic",
    );
    expect(describeProviderLimit(limit as NonNullable<typeof limit>, "claude-code")).toBe(
      "claude-code's model provider (anthropic) is rate-limiting (status 429, retry after 2 s): slow down",
    );
  });
});

describe("retryAfterMsOf", () => {
  it("reads retry-after-ms first, then retry-after in seconds or as a date", () => {
    const now = Date.parse("2026-11-28T10:00:00Z");
    expect(retryAfterMsOf({ "retry-after-ms": "10", "retry-after": "5" })).toBe(10);
    expect(retryAfterMsOf({ "Retry-After": "5" })).toBe(5000);
    expect(retryAfterMsOf({ "retry-after": "Sat, 28 Nov 2026 10:01:00 GMT" }, now)).toBe(60_000);
    expect(retryAfterMsOf({ "retry-after": "soon" })).toBeUndefined();
    expect(retryAfterMsOf({})).toBeUndefined();
  });
});
