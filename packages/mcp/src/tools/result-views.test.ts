import { emptyUsage, type RunReport } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { reportResult } from "./result-views.js";
import { runReportSchema } from "./tool-schemas.js";

const usage = emptyUsage();
const base: RunReport = {
  runId: "r",
  request: "Write A and B",
  status: "partial",
  reason: "Every sub-task completed, but the request is not met as a whole: missing the README.",
  subTasks: [],
  usage: { manager: usage, agents: usage, total: usage },
  startedAt: "2026-11-25T19:00:00.000Z",
  finishedAt: "2026-11-25T19:01:00.000Z",
  durationMs: 60_000,
};

describe("get_run_report's result", () => {
  it("says what the integration gate sent back, a final result that failed, and what the acceptance found missing", () => {
    const result = reportResult(
      {
        ...base,
        integration: {
          mode: "batch",
          runs: 3,
          failures: [
            {
              subTaskId: "b",
              attempt: 1,
              with: ["a"],
              checks: [{ argv: ["npm", "test"], detail: "exit 1" }],
            },
          ],
          final: {
            passed: false,
            checks: [
              { argv: ["tsc"], passed: true, detail: "exit 0" },
              { argv: ["npm", "test"], passed: false, detail: "exit 1" },
            ],
          },
        },
        acceptance: {
          verdict: "unsatisfied",
          rounds: 1,
          missing: [{ what: "the README", why: "asked for" }],
          continued: [],
          usage,
        },
      },
      "/p",
      undefined,
    );
    expect(runReportSchema.parse(result)).toMatchObject({
      integration: {
        runs: 3,
        sentBack: [{ subTaskId: "b", attempt: 1, failed: ["npm test"] }],
        finalFailed: ["npm test"],
      },
      acceptance: { verdict: "unsatisfied", missing: ["the README"] },
    });
  });

  it("leaves both out of a run without them", () => {
    const result = reportResult({ ...base, status: "completed", reason: null }, "/p", undefined);
    expect(result.integration).toBeUndefined();
    expect(result.acceptance).toBeUndefined();
    expect(
      reportResult(
        { ...base, integration: { mode: "off", runs: 0, failures: [] } },
        "/p",
        undefined,
      ).integration,
    ).toBeUndefined();
  });
});
