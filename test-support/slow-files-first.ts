import { BaseSequencer, type TestSpecification } from "vitest/node";

// The files that take longest (seconds, one at a time, CI on 2 cores, 2026-11-25), started first
// so the run does not end waiting on one of them alone. A fresh clone has no vitest cache, and the
// default order (by project name, then by file size) would start the longest file near the end.
const slowest: readonly (readonly [string, number])[] = [
  ["executor/src/opencode/opencode-executor.test.ts", 145],
  ["cli/src/commands/queue-run.test.ts", 90],
  ["cli/src/commands/kill-resume.test.ts", 50],
  ["cli/src/options/best-of-resume.test.ts", 44],
  ["cli/src/packed-install.test.ts", 34],
  ["cli/src/commands/ui-run.test.ts", 33],
  ["cli/src/options/best-of-options.test.ts", 28],
  ["telemetry/src/telemetry.test.ts", 26],
  ["executor/src/agent/attempt-temp-dir.test.ts", 23],
  ["cli/src/signals.test.ts", 23],
  ["cli/src/options/best-of.test.ts", 22],
  ["executor/src/opencode/host-death.test.ts", 16],
  ["cli/src/options/project-environment.test.ts", 15],
  ["cli/src/cli.test.ts", 13],
  ["cli/src/runtime/sandbox-run.test.ts", 13],
  ["cli/src/commands/mcp-command.test.ts", 13],
  ["cli/src/runtime/otlp-export.test.ts", 11],
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
