import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// The one place that lists the test projects: one per package. Workspace packages resolve to
// their sources, so tests never need a build.
const packages = [
  "core",
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
];

const alias = Object.fromEntries(
  packages.map((name) => [
    `@taskledger/${name}`,
    fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url)),
  ]),
);

export default defineConfig({
  test: {
    projects: [
      ...packages.map((name) => ({
        resolve: { alias },
        test: {
          name,
          root: `./packages/${name}`,
          include: ["src/**/*.test.ts"],
          environment: "node",
          setupFiles,
          testTimeout: 30_000,
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
          testTimeout: 30_000,
        },
      },
    ],
  },
});
