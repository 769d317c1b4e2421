import type { RunReport, Usage } from "@taskledger/core";
import { oneLine, totalTokens } from "@taskledger/core";
import type { Colors } from "picocolors/types.js";
import { formatDuration } from "./event-lines.js";
import { terminalText } from "./terminal-text.js";

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
      String(s.attempts),
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
