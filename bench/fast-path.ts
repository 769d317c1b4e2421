// Dispatch → the agent's first model request, as a user gets it: the default (server) executor,
// worktrees of a repository of 10,000 tracked files with a 20,000-file ignored `node_modules`,
// a planner that thinks for 2 s (the slots and servers are made meanwhile). A first run on the
// repository, then a second one (its slots kept from the first), at concurrency 1 and 4.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createManager, type RunEvent } from "@taskledger/core";
import { createEvaluator } from "@taskledger/evaluator";
import { createOpencodeServerExecutor } from "@taskledger/executor";
import { gitWorkspaces } from "@taskledger/git-workspace";
import { createModel } from "@taskledger/llm";
import {
  createGitRepo,
  createModelServer,
  scriptedOpencodeProvider,
  tempDirectory,
} from "@taskledger/testing";

export interface FastPathRow {
  run: "first" | "second";
  concurrency: number;
  /** Dispatch (`sub-task-started`) → the model server receiving the attempt's first request, ms. */
  p50Ms: number;
  maxMs: number;
  attempts: number;
}

// Removed when the process ends, however it ends (an error, Ctrl-C).
const benchDir = tempDirectory("taskledger-bench-fast-");
// Kept slots go to the bench's own cache, never the user's.
process.env.TASKLEDGER_CACHE_DIR ??= join(benchDir, "cache");

/** The repository: `tracked` files git tracks, `dependencies` files in an ignored node_modules. */
export function project(tracked: number, dependencies: number, under = benchDir): string {
  const files: Record<string, string> = { ".gitignore": "node_modules/\n" };
  for (let i = 0; i < tracked; i++) files[`src/d${Math.floor(i / 100)}/f${i}.ts`] = `${i}\n`;
  const repo = createGitRepo(mkdtempSync(join(under, "repo-")), files);
  for (let d = 0; d < dependencies / 100; d++) {
    const dir = join(repo, "node_modules", `pkg-${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(dir, `f${f}.js`), `module.exports=${f};\n`);
  }
  return repo;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? Number.NaN;
};

export async function benchFastPath(
  tracked = 10_000,
  dependencies = 20_000,
): Promise<FastPathRow[]> {
  const firstRequest = new Map<string, number>();
  let subTasks: { id: string; title: string; description: string; successCriteria: string[] }[] =
    [];
  const server = await createModelServer({
    replies: (request) => {
      const body = JSON.stringify(request.body);
      const schema = (request.body as { response_format?: { json_schema?: { name?: string } } })
        .response_format?.json_schema?.name;
      if (schema === "task_ledger") return { text: JSON.stringify({ subTasks }), delayMs: 2000 };
      if (schema)
        return {
          text: JSON.stringify({ completed: true, summary: "ok", outputData: "", feedback: "" }),
        };
      const tag = /\[bench-task-\d+-\d+\]/.exec(body)?.[0];
      if (tag && !firstRequest.has(tag)) firstRequest.set(tag, performance.now());
      return { text: "Done: nothing was needed for this step, it is complete." };
    },
  });
  const model = createModel({
    provider: "openai-compatible",
    model: "bench",
    baseURL: server.openaiBaseURL,
  });
  const rows: FastPathRow[] = [];
  let round = 0;
  try {
    for (const concurrency of [1, 4]) {
      const repo = project(tracked, dependencies);
      for (const run of ["first", "second"] as const) {
        round++;
        subTasks = Array.from({ length: concurrency }, (_, i) => ({
          id: `t${i}`,
          title: `Step ${i}`,
          description: `Say done. [bench-task-${round}-${i}]`,
          successCriteria: ["done"],
        }));
        // A new executor per run, as each `taskledger run` process makes its own.
        const executor = createOpencodeServerExecutor({
          model: "scripted/m",
          config: { provider: scriptedOpencodeProvider(server, { models: ["m"] }) },
          poolSize: concurrency,
        });
        const dispatched = new Map<string, number>();
        const manager = createManager({
          cwd: repo,
          model,
          executor,
          evaluator: createEvaluator({ model }),
          decompose: "always",
          concurrency,
          isolation: "worktree",
          workspaces: gitWorkspaces(),
        });
        const onEvent = (event: RunEvent) => {
          if (event.type === "sub-task-started" && event.attempt === 1)
            dispatched.set(`[bench-task-${round}-${event.subTaskId.slice(1)}]`, performance.now());
        };
        try {
          const report = await manager.run("Say done in steps.", { onEvent });
          if (report.status !== "completed") throw new Error(`fast path run: ${report.status}`);
        } finally {
          await executor.close();
        }
        const waits = [...dispatched].map(
          ([tag, at]) => (firstRequest.get(tag) ?? Number.NaN) - at,
        );
        rows.push({
          run,
          concurrency,
          p50Ms: percentile(waits, 0.5),
          maxMs: Math.max(...waits),
          attempts: waits.length,
        });
      }
    }
  } finally {
    await server.close();
    // Its 10,000-file repositories, their node_modules and kept slots go at once (837 MB).
    for (const entry of readdirSync(benchDir))
      rmSync(join(benchDir, entry), { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.main) {
  for (const row of await benchFastPath()) process.stdout.write(`${JSON.stringify(row)}\n`);
}
