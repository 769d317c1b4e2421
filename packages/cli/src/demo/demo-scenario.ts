import type { TaskLedgerInput } from "@taskledger/core";
import type { AgentName } from "@taskledger/executor";
import {
  afterToolResult,
  type RecordedRequest,
  type ScriptedReply,
  type ScriptedToolCall,
  scriptByRole,
  subTaskOf,
} from "@taskledger/testing";

export const demoRequest =
  "Create a tiny greeting library: greet.js exporting greet(name), a test script greet.test.js " +
  "that checks it with node:assert, and a README.md that shows how to use it.";

const greetJs = `export function greet(name) {\n  return \`Hello, \${name}!\`;\n}\n`;
const greetTest = `import assert from "node:assert/strict";\nimport { greet } from "./greet.js";\n\nassert.equal(greet("Ada"), "Hello, Ada!");\nconsole.log("greet.test.js: ok");\n`;
const readme = `# greet\n\n\`\`\`js\nimport { greet } from "./greet.js";\ngreet("Ada"); // "Hello, Ada!"\n\`\`\`\n\nRun the test with \`node greet.test.js\`.\n`;

/** The plan the scripted manager answers with. */
export const demoPlan: TaskLedgerInput = {
  subTasks: [
    {
      id: "library",
      title: "Write greet.js",
      description:
        "Create greet.js, an ES module exporting greet(name) that returns `Hello, <name>!`.",
      successCriteria: ["greet.js exists and exports greet"],
      dependsOn: [],
      checks: [{ type: "file-matches", path: "greet.js", pattern: "export function greet" }],
    },
    {
      id: "tests",
      title: "Test greet",
      description:
        "Create greet.test.js that imports greet from ./greet.js and checks it with node:assert.",
      successCriteria: ["node greet.test.js exits 0"],
      dependsOn: ["library"],
      checks: [{ type: "command", argv: ["node", "greet.test.js"], timeoutMs: 30_000 }],
    },
    {
      id: "docs",
      title: "Document greet",
      description: "Write README.md with a usage example of greet and how to run the test.",
      successCriteria: ["README.md shows an example call of greet"],
      dependsOn: ["library"],
      checks: [{ type: "file-exists", path: "README.md" }],
    },
  ],
};

const files: Record<string, { path: string; content: string; summary: string }> = {
  library: { path: "greet.js", content: greetJs, summary: "Wrote greet.js exporting greet(name)." },
  tests: { path: "greet.test.js", content: greetTest, summary: "Wrote greet.test.js; it passes." },
  docs: { path: "README.md", content: readme, summary: "Wrote README.md with a usage example." },
};

/**
 * Answers the demo's model calls as a real provider would: the manager's plan, the judge's
 * verdicts and the agents' turns (a write tool call, then a short report). The first attempt of
 * `tests` is cut off with a `length` finish, so the run shows a targeted retry.
 */
export function createDemoReplies(
  agent: AgentName = "opencode",
): (request: RecordedRequest) => ScriptedReply | undefined {
  const agentAttempts = new Map<string, number>();
  // Claude Code continues a cut-off answer three times by itself before it gives up.
  const cuts = agent === "claude-code" ? 4 : 1;
  return scriptByRole({
    plan: { text: JSON.stringify(demoPlan) },
    judge: (request) => {
      const file = files[subTaskOf(request) ?? ""];
      return {
        text: JSON.stringify({
          completed: true,
          summary: file?.summary ?? "Done.",
          outputData: file ? `${file.path}:\n${file.content}` : "",
          feedback: "",
        }),
      };
    },
    agent: (request) => {
      const id = subTaskOf(request) ?? "";
      const file = files[id];
      if (!file) return { text: "Nothing to do." };
      // The agent's turn after its tool ran: report and stop.
      if (afterToolResult(request)) return { text: file.summary };
      const attempt = (agentAttempts.get(id) ?? 0) + 1;
      agentAttempts.set(id, attempt);
      if (id === "tests" && attempt <= cuts) {
        return {
          text: "I will now write the test file that imports greet and",
          finishReason: "length",
        };
      }
      return { toolCalls: [agentWriteCall(agent, file.path, file.content)] };
    },
  });
}

/** Each agent's own way of writing a file, relative to its directory. */
export function agentWriteCall(agent: AgentName, path: string, content: string): ScriptedToolCall {
  if (agent === "claude-code") {
    return { name: "Edit", arguments: { file_path: path, old_string: "", new_string: content } };
  }
  if (agent === "codex") {
    const encoded = Buffer.from(content).toString("base64");
    return { name: "exec_command", arguments: { cmd: `echo ${encoded} | base64 -d > ${path}` } };
  }
  return { name: "write", arguments: { filePath: path, content } };
}
