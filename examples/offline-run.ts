// How a host tests its own taskledger integration offline, with no key and no network: the scripted
// model server plays the planner, the judge and the agent, told apart by role, and the real provider
// SDK and the real opencode CLI talk to it over HTTP on 127.0.0.1. Copy it into your tests and
// change the script; docs/testing.md explains each part.
import { createManager, type RunReport, type TaskLedgerInput } from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { createOpencodeExecutor } from "@taskledger/executor";
import { createModel } from "@taskledger/llm";
import {
  afterToolResult,
  createModelServer,
  type RecordedRequest,
  scriptByRole,
  scriptedOpencodeProvider,
  subTaskOf,
} from "@taskledger/testing";

/** What the scripted planner answers: two steps, the second after the first. */
export const offlinePlan: TaskLedgerInput = {
  subTasks: [
    {
      id: "hello",
      title: "Write hello.txt",
      description: "Create hello.txt containing the word hello.",
      successCriteria: ["hello.txt says hello"],
      dependsOn: [],
      checks: [{ type: "file-matches", path: "hello.txt", pattern: "hello" }],
    },
    {
      id: "bye",
      title: "Write bye.txt",
      description: "Create bye.txt containing the word bye.",
      successCriteria: ["bye.txt says bye"],
      dependsOn: ["hello"],
    },
  ],
};

/** The agent's turns: write the sub-task's file with opencode's `write` tool, then report. */
function agentTurn(request: RecordedRequest) {
  const id = subTaskOf(request);
  if (id === undefined) return { text: "Nothing to do." }; // opencode's own calls, such as a title
  if (afterToolResult(request)) return { text: `Wrote ${id}.txt.` };
  return {
    toolCalls: [{ name: "write", arguments: { filePath: `${id}.txt`, content: `${id}\n` } }],
  };
}

/** Runs `request` in `cwd` against a scripted server; resolves with the report and what the server saw. */
export async function runOffline(
  request: string,
  cwd: string,
  abortSignal?: AbortSignal,
): Promise<{ report: RunReport; requests: RecordedRequest[]; unexpected: number }> {
  const server = await createModelServer({
    replies: scriptByRole({
      plan: { text: JSON.stringify(offlinePlan) },
      judge: (call) => ({
        text: JSON.stringify({
          completed: true,
          summary: `Step ${subTaskOf(call)} is done.`,
          outputData: "",
          feedback: "",
        }),
      }),
      agent: agentTurn,
    }),
  });
  try {
    // The manager's model through the real OpenAI SDK; any provider works (see baseURLs in docs).
    const model = createModel({
      provider: "openai-compatible",
      model: "scripted-manager",
      baseURL: server.openaiBaseURL,
    });
    // The real opencode CLI, its model pointed at the same server.
    const executor = createOpencodeExecutor({
      model: "scripted/test-model",
      config: { provider: scriptedOpencodeProvider(server) },
    });
    const manager = createManager({
      model,
      executor,
      evaluator: createEvaluator({ model }),
      decompose: "always",
    });
    const report = await manager.run(request, { cwd, ...(abortSignal ? { abortSignal } : {}) });
    return { report, requests: [...server.requests], unexpected: server.unexpected };
  } finally {
    await server.close();
  }
}
