import type { RunReport, Usage } from "@taskledger/core";
import { oneLine, totalTokens } from "@taskledger/core";
import type { Colors } from "picocolors/types.js";
import { commandsText } from "./event-lines.js";
import { providerLines } from "./provider-limit-lines.js";
import { formatDuration, terminalText } from "./terminal-text.js";

const statusColor = (status: string, c: Colors) =>
  status === "completed"
    ? c.green
    : status === "failed"
      ? c.red
      : status === "skipped" || status === "cancelled"
        ? c.yellow
        : c.dim;

/** Dollars when known; `unknown` (or a lower bound `≥$…`) when some tokens have no price. */
export function costText(usage: Usage): string {
  const priced = usage.costUsd === undefined ? undefined : `$${usage.costUsd.toFixed(4)}`;
  if (usage.unpricedModels?.length) return priced && usage.costUsd! > 0 ? `≥${priced}` : "unknown";
  if (priced !== undefined) return priced;
  return totalTokens(usage) === 0 ? "–" : "unknown";
}
const cost = costText;

/** The final table: one row a sub-task, then manager, agents and total usage. */
export function summaryTable(
  report: RunReport,
  perSubTask: ReadonlyMap<string, Usage>,
  c: Colors,
): string {
  const rows = report.subTasks.map((s) => {
    const usage = s.usage?.total ?? perSubTask.get(s.id);
    return [
      terminalText(s.id),
      s.status,
      // Attempts a provider's limit ended are no try of the agent's: said beside the count.
      s.rateLimited ? `${s.attempts} +${s.rateLimited} rate-limited` : String(s.attempts),
      usage ? String(totalTokens(usage)) : "0",
      usage ? cost(usage) : "–",
    ];
  });
  const header = ["sub-task", "status", "attempts", "tokens", "cost"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[], color?: (s: string) => string) =>
    cells
      .map((cell, i) => {
        const padded = i >= 2 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!);
        return i === 1 && color ? color(padded) : padded;
      })
      .join("  ");
  const { manager, agents, total } = report.usage;
  const headline = `Run ${statusColor(report.status, c)(report.status)} in ${formatDuration(report.durationMs)}${report.reason ? c.dim(` — ${terminalText(report.reason)}`) : ""}`;
  return [
    "",
    c.bold(headline),
    c.dim(line(header)),
    ...rows.map((r) => line(r, statusColor(r[1]!, c))),
    "",
    `tokens: manager ${totalTokens(manager)} (${cost(manager)}), agents ${totalTokens(agents)} (${cost(agents)}), total ${totalTokens(total)} (${cost(total)})`,
    ...(report.candidates
      ? [
          `candidates: ${report.candidates.rounds} round(s) cost ${totalTokens(report.candidates.extraUsage)} tokens (${cost(report.candidates.extraUsage)}) beyond their winners`,
        ]
      : []),
    ...integrationLines(report.integration, c),
    ...acceptanceLines(report.acceptance, c),
    ...providerLines(report.providers, c),
    ...report.subTasks.flatMap((s) =>
      (s.outsideCwd ?? []).map((o) =>
        c.yellow(
          `${o.shared ? "outside --cwd" : "left out"}: ${terminalText(s.id)} attempt ${o.attempt} changed ${o.count} path(s) outside the run's directory (${terminalText(oneLine(o.paths.join(", "), 160))}); ${o.shared ? "shared directory: not reverted" : "not applied"}`,
        ),
      ),
    ),
    ...report.subTasks.flatMap((s) =>
      s.refusals?.length
        ? [
            c.yellow(
              `sandbox: ${terminalText(s.id)} was refused ${terminalText(oneLine(s.refusals.map((r) => `${r.kind} ${r.target} (attempt ${r.attempt})`).join(", "), 200))}`,
            ),
          ]
        : [],
    ),
    ...(total.unpricedModels?.length
      ? [
          c.dim(
            `cost unknown: no price for ${total.unpricedModels.map((m) => terminalText(m)).join(", ")} (give one with --prices FILE)`,
          ),
        ]
      : []),
  ].join("\n");
}

// Sent-back merges named in the summary; the JSON report has them all (the last 20).
const shownFailures = 5;

/** What the integration gate ran and found: its runs, the merges it sent back, the final result. */
export function integrationLines(integration: RunReport["integration"], c: Colors): string[] {
  if (!integration) return [];
  const { mode, runs, failures, final } = integration;
  const finalText = !final
    ? ""
    : final.passed
      ? `; the final result passed ${commandsText(final.checks)}`
      : `; the final result failed ${commandsText(final.checks.filter((check) => !check.passed))}`;
  const head = `integration (${mode}): ${runs} check run${runs === 1 ? "" : "s"}, ${failures.length} merge${failures.length === 1 ? "" : "s"} sent back${finalText}`;
  return [
    final && !final.passed ? c.yellow(head) : head,
    ...failures.slice(-shownFailures).map((f) => {
      const broke = f.checks.length > 0 ? commandsText(f.checks) : "the checks";
      const met = f.with.length > 0 ? ` with ${terminalText(oneLine(f.with.join(", "), 120))}` : "";
      const detail = f.checks[0]?.detail;
      return c.yellow(
        `  ${terminalText(f.subTaskId)} attempt ${f.attempt} broke ${broke} once merged${met}${
          detail ? c.dim(`: ${terminalText(oneLine(detail, 160))}`) : ""
        }`,
      );
    }),
    ...(failures.length > shownFailures
      ? [c.dim(`  and ${failures.length - shownFailures} more (--json has them)`)]
      : []),
    ...(final && !final.passed
      ? final.checks
          .filter((check) => !check.passed)
          .slice(0, 3)
          .map((check) =>
            c.yellow(
              `  final: \`${terminalText(check.argv.join(" "))}\`: ${terminalText(oneLine(check.detail, 200))}`,
            ),
          )
      : []),
  ];
}

/** The request judged as a whole: the verdict, what is missing, the sub-tasks planned for it. */
export function acceptanceLines(acceptance: RunReport["acceptance"], c: Colors): string[] {
  if (!acceptance) return [];
  const { verdict, rounds, missing, reason, continued, usage } = acceptance;
  const spent = c.dim(
    ` (${rounds} round${rounds === 1 ? "" : "s"}, ${totalTokens(usage)} tokens, ${cost(usage)})`,
  );
  const planned =
    continued.length > 0
      ? `; ${continued.length} sub-task${continued.length === 1 ? "" : "s"} added for missing work (${terminalText(oneLine(continued.join(", "), 120))})`
      : "";
  if (verdict === "satisfied")
    return [`acceptance: ${c.green("satisfied")}, the request is met as a whole${planned}${spent}`];
  if (verdict === "unavailable")
    return [
      `acceptance: ${c.yellow("no verdict")} (${terminalText(oneLine(reason ?? "the judge did not answer", 200))})${planned}${spent}`,
    ];
  return [
    `acceptance: ${c.yellow("unsatisfied")}, the request is not met as a whole${planned}${spent}; missing:`,
    ...missing.map(
      (m) =>
        `  · ${terminalText(oneLine(m.what, 160))}${m.why ? c.dim(` — ${terminalText(oneLine(m.why, 200))}`) : ""}`,
    ),
  ];
}
