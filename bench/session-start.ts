// The fixed cost every sub-task pays: one `opencode run` that answers "ok" at once, under the
// executor's hermetic setup (alone and 2 or 4 at a time), and under opencode's own default setup.
import { spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import type { SubTask } from "@taskledger/core";
import { createOpencodeExecutor, resolveOpencodeBinary } from "@taskledger/executor";
import {
  createModelServer,
  type ModelServer,
  scriptedOpencodeProvider,
  tempDirectory,
} from "@taskledger/testing";

export interface SessionStartRow {
  setup: string;
  parallel: number;
  attempts: number;
  meanWallMs: number;
  attemptsPerMinute: number;
}

const subTask: SubTask = {
  id: "empty",
  title: "empty",
  description: "Say ok.",
  successCriteria: ["ok"],
  dependsOn: [],
  checks: [],
};

const provider = (server: ModelServer) => scriptedOpencodeProvider(server, { models: ["m"] });

async function hermetic(
  server: ModelServer,
  parallel: number,
  rounds: number,
): Promise<SessionStartRow> {
  const executor = createOpencodeExecutor({
    model: "scripted/m",
    config: { provider: provider(server) },
  });
  const dirs = Array.from({ length: parallel }, () => tempDirectory("bench-start-"));
  let total = 0;
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const results = await Promise.all(
      dirs.map((cwd) =>
        executor.run("Say ok.", {
          subTask,
          attempt: 1,
          cwd,
          abortSignal: new AbortController().signal,
        }),
      ),
    );
    for (const result of results) {
      if (result.outcome !== "finished")
        throw new Error(`hermetic attempt ended ${result.outcome}: ${result.error}`);
      total += result.durationMs;
    }
  }
  const wall = performance.now() - started;
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  const attempts = parallel * rounds;
  return {
    setup: "hermetic (executor)",
    parallel,
    attempts,
    meanWallMs: total / attempts,
    attemptsPerMinute: (attempts / wall) * 60_000,
  };
}

/**
 * opencode as a user would start it: a fresh home, its own data directory, the provider given by
 * config and nothing else, so its first-run work (migrations, the plugin install, the models
 * catalogue) is included, as for anyone who has not run it before on that account.
 */
async function defaults(server: ModelServer): Promise<SessionStartRow> {
  const home = tempDirectory("bench-home-");
  const cwd = tempDirectory("bench-start-");
  const binary = resolveOpencodeBinary();
  const started = performance.now();
  const exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn(binary, ["run", "--format", "json", "-m", "scripted/m", "Say ok."], {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        PWD: cwd,
        OPENCODE_CONFIG_CONTENT: JSON.stringify({ provider: provider(server) }),
      },
      stdio: ["ignore", "ignore", "ignore"],
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  const wall = performance.now() - started;
  await rm(home, { recursive: true, force: true });
  await rm(cwd, { recursive: true, force: true });
  if (exitCode !== 0) throw new Error(`default opencode run exited ${exitCode}`);
  return {
    setup: "opencode defaults, first run",
    parallel: 1,
    attempts: 1,
    meanWallMs: wall,
    attemptsPerMinute: 60_000 / wall,
  };
}

export async function benchSessionStart(): Promise<SessionStartRow[]> {
  const server = await createModelServer({ replies: () => ({ text: "ok" }) });
  try {
    return [
      await defaults(server),
      await hermetic(server, 1, 3),
      await hermetic(server, 2, 2),
      await hermetic(server, 4, 1),
    ];
  } finally {
    await server.close();
  }
}
