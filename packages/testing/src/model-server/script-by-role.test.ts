import { describe, expect, it } from "vitest";
import type { RecordedRequest } from "./model-server.js";
import { createModelServer } from "./model-server.js";
import {
  acceptanceReply,
  afterToolResult,
  roleOf,
  scriptByRole,
  subTaskOf,
} from "./script-by-role.js";

const request = (face: RecordedRequest["face"], body: unknown): RecordedRequest => ({
  face,
  method: "POST",
  path: "/",
  headers: {},
  body,
  stream: false,
  model: "m",
});

describe("roleOf", () => {
  it.each([
    [
      "openai",
      { response_format: { type: "json_schema", json_schema: { name: "task_ledger" } } },
      "plan",
    ],
    ["openai", { response_format: { json_schema: { name: "progress_ledger_entry" } } }, "judge"],
    ["anthropic", { tool_choice: { type: "tool", name: "progress_ledger_entry" } }, "judge"],
    [
      "anthropic",
      { output_config: { format: { schema: { properties: { subTasks: {} } } } } },
      "plan",
    ],
    [
      "google",
      { generationConfig: { responseJsonSchema: { properties: { completed: {}, feedback: {} } } } },
      "judge",
    ],
    [
      "openai",
      {
        messages: [
          { role: "system", content: "Answer with a single JSON object named task_ledger" },
        ],
      },
      "plan",
    ],
    ["openai", { response_format: { json_schema: { name: "request_acceptance" } } }, "accept"],
    ["anthropic", { tool_choice: { type: "tool", name: "request_acceptance" } }, "accept"],
    [
      "anthropic",
      { output_config: { format: { schema: { properties: { satisfied: {}, missing: {} } } } } },
      "accept",
    ],
    [
      "google",
      { generationConfig: { responseJsonSchema: { properties: { satisfied: {}, missing: {} } } } },
      "accept",
    ],
    [
      "google",
      {
        systemInstruction: {
          parts: [{ text: "Answer as JSON only, named request_acceptance: { ... }" }],
        },
      },
      "accept",
    ],
    [
      "openai",
      {
        messages: [
          { role: "system", content: "Answer as JSON only, named request_acceptance." },
          { role: "user", content: "Is the request met?" },
        ],
      },
      "accept",
    ],
    [
      "openai",
      { messages: [{ role: "user", content: "# Sub-task lib: write lib.js" }], tools: [{}] },
      "agent",
    ],
  ] as const)("%s %j is the %s role", (face, body, role) => {
    expect(roleOf(request(face, body))).toBe(role);
  });
});

describe("scriptByRole", () => {
  it("answers each role from its own script, lists in order, and a missing reply as unexpected", async () => {
    const replies = scriptByRole({
      plan: { text: "the plan" },
      judge: [{ text: "verdict 1" }, { text: "verdict 2" }],
      agent: (r) => ({ text: afterToolResult(r) ? "done" : `working on ${subTaskOf(r)}` }),
    });
    const server = await createModelServer({ replies });
    const post = async (body: unknown) => {
      const res = await fetch(`${server.openaiBaseURL}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { choices?: { message: { content: string } }[] };
      return json.choices?.[0]?.message.content ?? res.status;
    };
    const judge = { response_format: { json_schema: { name: "progress_ledger_entry" } } };
    try {
      expect(await post({ response_format: { json_schema: { name: "task_ledger" } } })).toBe(
        "the plan",
      );
      expect(await post({ messages: [{ role: "user", content: "# Sub-task lib: go" }] })).toBe(
        "working on lib",
      );
      expect(await post({ messages: [{ role: "tool", content: "ok" }] })).toBe("done");
      expect(await post(judge)).toBe("verdict 1");
      expect(await post(judge)).toBe("verdict 2");
      expect(server.unexpected).toBe(0);
      expect(await post(judge)).toBe(500);
      expect(server.unexpected).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe("the acceptance judge's role", () => {
  const accept = { response_format: { json_schema: { name: "request_acceptance" } } };
  const reply = (replies: ReturnType<typeof scriptByRole>) =>
    replies(request("openai", accept)) as { text?: string } | undefined;

  it("answers satisfied when the script leaves accept out, so older scripts still run", () => {
    const replies = scriptByRole({ plan: { text: "the plan" } });
    expect(JSON.parse(reply(replies)?.text ?? "")).toEqual({ satisfied: true, missing: [] });
    expect(JSON.parse(reply(replies)?.text ?? "")).toEqual({ satisfied: true, missing: [] });
  });

  it("answers from the script's accept list in order, then nothing (unexpected)", () => {
    const replies = scriptByRole({
      accept: [acceptanceReply([{ what: "the README section" }]), acceptanceReply()],
    });
    expect(JSON.parse(reply(replies)?.text ?? "")).toEqual({
      satisfied: false,
      missing: [{ what: "the README section", why: "" }],
    });
    expect(JSON.parse(reply(replies)?.text ?? "")).toEqual({ satisfied: true, missing: [] });
    expect(reply(replies)).toBeUndefined();
  });
});
