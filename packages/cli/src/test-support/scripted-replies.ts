// What the scripted model server says in the CLI's tests: the judge's verdict, an agent's tool
// calls. Not part of the package.
import {
  afterToolResult,
  type RecordedRequest,
  type ScriptedCompletion,
} from "@taskledger/testing";

/** The judge's verdict that a sub-task is complete, with `summary` (and `outputData`). */
export function completedJudge(summary: string, outputData = ""): ScriptedCompletion {
  return { text: JSON.stringify({ completed: true, summary, outputData, feedback: "" }) };
}

/** An agent's turn that writes `content` to `filePath`. */
export function writeCall(filePath: string, content: string): ScriptedCompletion {
  return { toolCalls: [{ name: "write", arguments: { filePath, content } }] };
}

/** An agent's turn that runs `command` in its shell. */
export function bashCall(command: string, description: string): ScriptedCompletion {
  return { toolCalls: [{ name: "bash", arguments: { command, description } }] };
}

/** How many tool results the agent's conversation holds so far (OpenAI chat bodies). */
export function toolResults(request: RecordedRequest): number {
  const messages = (request.body as { messages?: { role?: string }[] }).messages ?? [];
  return messages.filter((message) => message.role === "tool").length;
}

/** An agent that makes `call`, then, once its result is back, answers `answer`. */
export function callThenAnswer(call: ScriptedCompletion, answer: string) {
  return (request: RecordedRequest): ScriptedCompletion =>
    afterToolResult(request) ? { text: answer } : call;
}
