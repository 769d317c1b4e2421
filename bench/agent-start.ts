// Per agent: dispatch → first model request (alone and 4 at once) and attempts per minute at
// concurrency 4, each attempt answered "ok" at once by the scripted model server.
import { rm } from "node:fs/promises";
import type { Executor } from "@taskledger/core";
import {
  createClaudeCodeExecutor,
  createCodexExecutor,
  createOpencodeExecutor,
  createOpencodeServerExecutor,
} from "@taskledger/executor";
import {
  createModelServer,
  type ModelServer,
  scriptedOpencodeProvider,
  tempDirectory,
} from "@taskledger/testing";
import { subTask } from "./start-sub-task.ts";

export interface AgentStartRow {
  agent: string;
  /** Mean ms from `run()` to the model server receiving the attempt's first request. */
  firstRequestAloneMs: number;
  firstRequestFourMs: number;
  attemptsPerMinute: number;
  attempts: number;
}

const agents: [string, (server: ModelServer) => Executor][] = [
  [
    "opencode (cli)",
    (server) =>
      createOpencodeExecutor({
        model: "scripted/m",
        config: { provider: scriptedOpencodeProvider(server, { models: ["m"] }) },
      }),
  ],
  [
    "opencode (server)",
    (server) =>
      createOpencodeServerExecutor({
        model: "scripted/m",
        config: { provider: scriptedOpencodeProvider(server, { models: ["m"] }) },
        poolSize: 4,
      }),
  ],
  [
    "claude-code",
    (server) =>
      createClaudeCodeExecutor({
        model: "m",
        env: { ANTHROPIC_BASE_URL: server.anthropicBaseURL, ANTHROPIC_API_KEY: "bench" },
      }),
  ],
  [
    "codex",
    (server) =>
      createCodexExecutor({
        model: "m",
        provider: { baseUrl: server.openaiBaseURL, envKey: "BENCH_KEY" },
        env: { BENCH_KEY: "bench" },
      }),
  ],
];

export async function benchAgentStart(rounds = 2): Promise<AgentStartRow[]> {
  const firstRequest = new Map<string, number>();
  const server = await createModelServer({
    replies: (request) => {
      const tag = /\[attempt-(\d+)\]/.exec(JSON.stringify(request.body))?.[0];
      if (tag && !firstRequest.has(tag)) firstRequest.set(tag, performance.now());
      return { text: "ok" };
    },
  });
  const dirs = Array.from({ length: 4 }, () => tempDirectory("bench-agent-"));
  let sequence = 0;
  const attempt = async (executor: Executor, cwd: string) => {
    const tag = `[attempt-${++sequence}]`;
    const dispatched = performance.now();
    const result = await executor.run(`Say ok. ${tag}`, {
      subTask,
      attempt: 1,
      cwd,
      abortSignal: new AbortController().signal,
    });
    if (result.outcome !== "finished")
      throw new Error(`attempt ended ${result.outcome}: ${result.error}`);
    return (firstRequest.get(tag) ?? Number.NaN) - dispatched;
  };
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const rows: AgentStartRow[] = [];
  try {
    for (const [agent, make] of agents) {
      const executor = make(server);
      try {
        // One attempt first, not counted: a server executor starts its server, every agent warms the disk cache.
        await attempt(executor, dirs[0] as string);
        const alone: number[] = [];
        for (let r = 0; r < rounds + 1; r++) alone.push(await attempt(executor, dirs[0] as string));
        const four: number[] = [];
        const started = performance.now();
        for (let r = 0; r < rounds; r++) {
          four.push(...(await Promise.all(dirs.map((cwd) => attempt(executor, cwd)))));
        }
        const wall = performance.now() - started;
        rows.push({
          agent,
          firstRequestAloneMs: mean(alone),
          firstRequestFourMs: mean(four),
          attempts: four.length,
          attemptsPerMinute: (four.length / wall) * 60_000,
        });
      } finally {
        await executor.close?.();
      }
    }
  } finally {
    await server.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
  return rows;
}

if (import.meta.main) {
  for (const row of await benchAgentStart()) process.stdout.write(`${JSON.stringify(row)}\n`);
}
