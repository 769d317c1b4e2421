import { PassThrough } from "node:stream";
import { createManager, type SubTaskInput, totalTokens } from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { createModel } from "@taskledger/llm";
import { createFakeExecutor, createModelServer, tempDirectory } from "@taskledger/testing";
import type { JsonReport } from "taskledger";
import { runCli } from "taskledger/cli";

// The runs work in an empty directory of their own, never in this repository.
// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-");

export interface ManagerOverheadRow {
  scenario: string;
  subTasks: number;
  attempts: number;
  managerTokens: number;
  agentTokens: number;
  managerShare: number;
}

/** The demo, as `npm run demo` runs it: real opencode sessions against the scripted model server. */
export async function demoOverhead(): Promise<{
  row: ManagerOverheadRow;
  agentTokensPerAttempt: number;
}> {
  const stdout = new PassThrough();
  let out = "";
  stdout.on("data", (d) => {
    out += d;
  });
  const code = await runCli(["demo", "--json"], {
    stdout,
    stderr: new PassThrough().resume(),
    stdin: new PassThrough(),
    env: { ...process.env, CI: "true" },
    cwd: process.cwd(),
    signal: new AbortController().signal,
  });
  const report = JSON.parse(out) as JsonReport;
  if (code !== 0) throw new Error(`demo ended ${report.status}`);
  const attempts = report.subTasks.reduce((n, s) => n + s.attempts, 0);
  const managerTokens = totalTokens(report.usage.manager);
  const agentTokens = totalTokens(report.usage.agents);
  return {
    row: {
      scenario: "demo (real opencode)",
      subTasks: report.subTasks.length,
      attempts,
      managerTokens,
      agentTokens,
      managerShare: managerTokens / (managerTokens + agentTokens),
    },
    agentTokensPerAttempt: Math.round(agentTokens / attempts),
  };
}

function plan(n: number): SubTaskInput[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `step-${i}`,
    title: `Implement part ${i} of the feature`,
    description: `Implement part ${i}: add src/part-${i}.ts with its function, export it from src/index.ts and cover it with a unit test in src/part-${i}.test.ts.`,
    successCriteria: [`src/part-${i}.ts exists`, "npm test passes"],
    dependsOn: i > 0 && i % 3 !== 0 ? [`step-${i - 1}`] : [],
    checks: [],
  }));
}

/** Scripted plans of n sub-tasks; every agent attempt costs what a demo attempt cost. */
export async function scriptedOverhead(
  sizes: number[],
  agentTokensPerAttempt: number,
): Promise<ManagerOverheadRow[]> {
  const rows: ManagerOverheadRow[] = [];
  for (const n of sizes) {
    const subTasks = plan(n);
    const server = await createModelServer({
      replies: (request) => {
        const body = request.body as { response_format?: { json_schema?: { name?: string } } };
        if (body.response_format?.json_schema?.name === "task_ledger")
          return { text: JSON.stringify({ subTasks }) };
        return {
          text: JSON.stringify({
            completed: true,
            summary: "Added the part, exported it and tested it; npm test passes.",
            outputData: "src/part.ts exports part(); tests in src/part.test.ts",
            feedback: "",
          }),
        };
      },
    });
    try {
      const model = createModel({
        provider: "openai-compatible",
        model: "bench",
        baseURL: server.openaiBaseURL,
      });
      const executor = createFakeExecutor({
        fallback: {
          type: "success",
          text: "I added src/part.ts with the function, exported it from src/index.ts and wrote src/part.test.ts; npm test passes (12 tests).",
          filesChanged: ["src/part.ts", "src/index.ts", "src/part.test.ts"],
          usage: { inputTokens: agentTokensPerAttempt - 400, outputTokens: 400 },
        },
      });
      const manager = createManager({
        cwd: benchDir,
        model,
        executor,
        evaluator: createEvaluator({ model }),
        maxSubTasks: n,
        concurrency: 8,
      });
      const request = `Build the feature in ${n} parts, then test each part and document it.`;
      const planned = await manager.plan(request);
      const report = await manager.run(request, { plan: planned.ledger });
      const managerTokens = totalTokens(report.usage.manager) + totalTokens(planned.usage);
      const agentTokens = totalTokens(report.usage.agents);
      rows.push({
        scenario: "scripted plan",
        subTasks: n,
        attempts: report.subTasks.reduce((sum, s) => sum + s.attempts, 0),
        managerTokens,
        agentTokens,
        managerShare: managerTokens / (managerTokens + agentTokens),
      });
    } finally {
      await server.close();
    }
  }
  return rows;
}
