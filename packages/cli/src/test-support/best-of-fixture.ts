// The sub-task the best-of tests give candidates of known quality. Not part of the package.
import type { AgentName } from "@taskledger/executor";
import { afterToolResult, type RecordedRequest } from "@taskledger/testing";
import { compatibleProviderId } from "../runtime/runtime.js";
import { writeCall } from "./scripted-replies.js";

// The check is weak: it tries one sum. `weak` passes it with a wrong sum, which its diff shows.
export const sums: Record<string, string> = {
  good: "module.exports = (a, b) => a + b;\n",
  bad: "module.exports = (a, b) => 0;\n",
  weak: "module.exports = (a, b) => (a === 2 && b === 3 ? 5 : 0);\n",
};

/** One risky sub-task: make sum.js add, checked by one sum. */
export const sumPlan = {
  subTasks: [
    {
      id: "sum",
      title: "Make sum.js add its two arguments",
      description: "sum.js exports a function of two numbers: make it return their sum.",
      successCriteria: ["sum(a, b) returns a + b for all numbers"],
      dependsOn: [],
      checks: [
        {
          type: "command",
          argv: ["node", "-e", "if (require('./sum.js')(2, 3) !== 5) process.exit(1)"],
        },
      ],
      risky: true,
    },
  ],
};

/** A candidate's agent model as a run names it: `codex:good`, `openai-compatible/good`. */
export function candidateModel(model: string, agent: AgentName = "codex"): string {
  return agent === "codex" ? `codex:${model}` : `${compatibleProviderId}/${model}`;
}

/** The agent model a request is for (`good`, `bad`, `weak` or the default `m`). */
export function modelOf(request: RecordedRequest): string {
  return String((request.body as { model?: string }).model ?? "");
}

/**
 * An agent (`agent`, with its own tool) whose model writes its own sum.js (`good`, `bad`,
 * `weak`); any other model writes `fallback`'s. Once written, it answers `answer`.
 */
export function ownSum(
  fallback: string,
  answer = "I wrote sum.js as the sub-task asks.",
  agent: AgentName = "codex",
) {
  return (request: RecordedRequest) => {
    if (afterToolResult(request)) return { text: answer };
    return writeCall("sum.js", sums[modelOf(request)] ?? sums[fallback]!, agent);
  };
}
