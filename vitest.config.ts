import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { SlowFilesFirst } from "./test-support/slow-files-first.ts";

// The one place that lists the test projects: one per package. Workspace packages resolve to
// their sources, so tests never need a build.
const packages = [
  "core",
  "process",
  "daemon",
  "git-workspace",
  "sandbox",
  "testing",
  "llm",
  "executor",
  "evaluator",
  "telemetry",
  "queue",
  "ui",
  "mcp",
  "cli",
] as const;

const setupFiles = [
  fileURLToPath(new URL("./test-support/outside-repository.ts", import.meta.url)),
  // Only under `node scripts/suite-cpu.mjs`: each file's CPU counted apart.
  fileURLToPath(new URL("./test-support/cpu-per-file.ts", import.meta.url)),
];

// A subpath entry first: the package's own alias would take it as a path under its index.
const alias = {
  "@taskledger/process/lifetime": fileURLToPath(
    new URL("./packages/process/src/lifetime.ts", import.meta.url),
  ),
  ...Object.fromEntries(
    packages.map((name) => [
      `@taskledger/${name}`,
      fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url)),
    ]),
  ),
};

// Files at once: as many as cores. Vitest's default (cores - 1) runs one file at a time on 2
// cores, leaving a core idle while that file waits on a model reply, a lock or a restart. Not
// more: the suite is CPU-bound (real opencode processes), and more files at once only slowed each.
// Every project gets the same count, so all files share one pool.
const maxWorkers = availableParallelism();
// A worker process runs one file after another without a new process and module graph for each:
// about 0.2 CPU-s a file less (docs/performance.md). The setup file still runs per file, giving
// each its own directory and environment.
const isolate = false;
// Hang guards, not time assertions: generous, since files now share the cores.
const testTimeout = 60_000;
const hookTimeout = 60_000;

export default defineConfig({
  test: {
    maxWorkers,
    sequence: { sequencer: SlowFilesFirst },
    projects: [
      ...packages.map((name) => ({
        resolve: { alias },
        test: {
          name,
          root: `./packages/${name}`,
          include: ["src/**/*.test.ts"],
          environment: "node",
          setupFiles,
          maxWorkers,
          isolate,
          testTimeout,
          hookTimeout,
          // Each real opencode attempt costs seconds of CPU: fewer at once on 2 cores, none starved.
          ...(name === "executor" ? { maxConcurrency: 3 } : {}),
        },
      })),
      {
        resolve: { alias },
        test: {
          name: "examples",
          root: "./examples",
          include: ["*.test.ts"],
          setupFiles,
          maxWorkers,
          isolate,
          testTimeout,
          hookTimeout,
        },
      },
    ],
  },
});
