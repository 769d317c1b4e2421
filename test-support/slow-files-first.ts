import { BaseSequencer, type TestSpecification } from "vitest/node";

// The files that take longest (seconds, two at once, vitest on 2 cores, 2026-11-28), started
// first so the run does not end waiting on one of them alone. A fresh clone has no vitest cache,
// and the default order (by project name, then by file size) would start a long file near the end.
const slowest: readonly (readonly [string, number])[] = [
  ["executor/src/opencode/opencode-executor.test.ts", 172],
  ["cli/src/commands/queue-run.test.ts", 98],
  ["cli/src/commands/kill-resume.test.ts", 80],
  ["cli/src/packed-install.test.ts", 78],
  ["cli/src/runtime/daemon-run.test.ts", 77],
  ["cli/src/runtime/agent-rate-limit.test.ts", 54],
  ["cli/src/options/best-of-resume.test.ts", 35],
  ["cli/src/commands/ui-run.test.ts", 34],
  ["cli/src/commands/rate-limit-run.test.ts", 32],
  ["executor/src/agent/attempt-temp-dir.test.ts", 30],
  ["cli/src/runtime/sandbox-run.test.ts", 26],
  ["cli/src/cli.test.ts", 25],
  ["executor/src/opencode/host-death.test.ts", 23],
  ["telemetry/src/telemetry.test.ts", 22],
  ["cli/src/runtime/cost.test.ts", 21],
  ["executor/src/claude-code/claude-code-executor.test.ts", 20],
  ["cli/src/signals.test.ts", 19],
  ["cli/src/runtime/otlp-export.test.ts", 15],
];

const seconds = (spec: TestSpecification) =>
  slowest.find(([path]) => spec.moduleId.replaceAll("\\", "/").endsWith(`packages/${path}`))?.[1] ??
  0;

/** Vitest's order (unknown and larger files first), with the known slow files moved to the front. */
export class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array sort is stable: the rest keep vitest's order.
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a));
  }
}
