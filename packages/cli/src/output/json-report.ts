import type { RunReport } from "@taskledger/core";

/**
 * The `--json` report: a stable contract (docs/json-report.md). Fields are only ever added;
 * `version` changes if one is removed or changes meaning.
 */
export function toJsonReport(report: RunReport) {
  return {
    version: 1 as const,
    runId: report.runId,
    status: report.status,
    reason: report.reason,
    request: report.request,
    subTasks: report.subTasks.map((s) => ({
      id: s.id,
      title: s.title,
      status: s.status,
      attempts: s.attempts,
      ...(s.rateLimited ? { rateLimited: s.rateLimited } : {}),
      summary: s.summary,
      outputData: s.outputData,
      reason: s.reason,
      ...(s.failure ? { failure: s.failure } : {}),
      replacedBy: s.replacedBy,
      ...(s.commit ? { commit: s.commit, filesChanged: s.filesChanged ?? [] } : {}),
      ...(s.usage ? { usage: s.usage } : {}),
      ...(s.candidates ? { candidates: s.candidates } : {}),
      ...(s.outsideCwd ? { outsideCwd: s.outsideCwd } : {}),
      ...(s.refusals ? { refusals: s.refusals } : {}),
    })),
    facts: report.facts ?? [],
    project: report.project ?? null,
    explore: report.explore ?? null,
    candidates: report.candidates ?? null,
    integration: report.integration ?? null,
    acceptance: report.acceptance ?? null,
    providers: report.providers ?? [],
    usage: report.usage,
    workspace: report.workspace ?? null,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    durationMs: report.durationMs,
  };
}
export type JsonReport = ReturnType<typeof toJsonReport>;
