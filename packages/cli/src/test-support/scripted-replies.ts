// What the scripted model server says in the CLI's tests: the judge's verdict, an agent's tool
// calls. Not part of the package.
import type { AgentName } from "@taskledger/executor";
import {
  afterToolResult,
  type RecordedRequest,
  type ScriptedCompletion,
} from "@taskledger/testing";
import { agentWriteCall } from "../demo/demo-scenario.js";

/** The judge's verdict that a sub-task is complete, with `summary` (and `outputData`). */
export function completedJudge(summary: string, outputData = ""): ScriptedCompletion {
  return { text: JSON.stringify({ completed: true, summary, outputData, feedback: "" }) };
}

/** An agent's turn that writes `content` to `filePath`, with `agent`'s own tool. */
export function writeCall(
  filePath: string,
  content: string,
  agent: AgentName = "opencode",
): ScriptedCompletion {
  return { toolCalls: [agentWriteCall(agent, filePath, content)] };
}

/** An agent's turn that runs `command` in its shell, with `agent`'s own tool. */
export function bashCall(
  command: string,
  description: string,
  agent: AgentName = "opencode",
): ScriptedCompletion {
  if (agent === "codex")
    return { toolCalls: [{ name: "exec_command", arguments: { cmd: command } }] };
  const name = agent === "claude-code" ? "Bash" : "bash";
  return { toolCalls: [{ name, arguments: { command, description } }] };
}

/** How many tool results the agent's conversation holds so far (OpenAI chat and Responses bodies). */
export function toolResults(request: RecordedRequest): number {
  const body = request.body as {
    messages?: { role?: string }[];
    input?: { type?: string }[] | string;
  };
  const chat = (body.messages ?? []).filter((message) => message.role === "tool").length;
  const input = Array.isArray(body.input) ? body.input : [];
  return chat + input.filter((item) => item.type === "function_call_output").length;
}

/** An agent that makes `call`, then, once its result is back, answers `answer`. */
export function callThenAnswer(call: ScriptedCompletion, answer: string) {
  return (request: RecordedRequest): ScriptedCompletion =>
    afterToolResult(request) ? { text: answer } : call;
}
