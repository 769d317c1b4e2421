import {
  type AttemptResult,
  clipMiddle,
  clipStart,
  estimateTokens,
  InvalidConfigError,
  oneLine,
  type ToolCallRecord,
  truncateToTokens,
} from "@taskledger/core";

export interface DigestOptions {
  /** Tokens the digest may take (estimated as core does). Default 3,000; at least 200. */
  maxTokens?: number;
}

export const defaultDigestTokens = 3000;
const charsPerToken = 4;
const maxInputChars = 300;
const maxOutputChars = 700;
const minCallChars = 160;

/**
 * A bounded account of one attempt for the judge: how it ended, the files it wrote, its latest
 * tool calls with trimmed inputs and outputs, and the end of its final text. Never the raw
 * transcript; whatever the attempt's size the digest stays within `maxTokens`, and the parts
 * that decide a verdict (the ending, the final answer, the newest tool calls) go in first.
 */
export function digestAttempt(result: AttemptResult, options: DigestOptions = {}): string {
  const maxTokens = options.maxTokens ?? defaultDigestTokens;
  if (!Number.isFinite(maxTokens) || maxTokens < 200) {
    throw new InvalidConfigError(`The digest's maxTokens must be at least 200, not ${maxTokens}`);
  }
  const budget = maxTokens * charsPerToken;

  const ending = clipMiddle(describeEnding(result), Math.floor(budget * 0.12));
  const files = describeFiles(result.filesChanged, Math.floor(budget * 0.1));
  const refused = clipMiddle(describeRefusals(result), Math.floor(budget * 0.06));
  const finalText = result.finalText.trim();
  const finalSection = `## Final text (the agent's own account, not proof)\n${
    finalText ? clipMiddle(finalText, Math.floor(budget * 0.35), 0.2) : "(none)"
  }`;
  const fixed = [ending, files, refused, finalSection].join("\n\n").length;
  const calls = describeToolCalls(result.toolCalls, budget - fixed - 8);

  const digest = [ending, files, refused, calls, finalSection].filter(Boolean).join("\n\n");
  // A safety net only: the sections above are sized to fit.
  return estimateTokens(digest) <= maxTokens ? digest : truncateToTokens(digest, maxTokens);
}

function describeEnding(result: AttemptResult): string {
  const steps = result.stepFinishReasons;
  const lines = [
    "## How the attempt ended",
    `outcome: ${result.outcome}`,
    `steps: ${steps.length}${steps.length ? ` (last: ${steps.slice(-5).join(", ")})` : ""}`,
    `duration: ${(result.durationMs / 1000).toFixed(1)} s; tokens: ${result.usage.inputTokens} in, ${result.usage.outputTokens} out`,
  ];
  if (result.error) lines.push(`error: ${clipMiddle(result.error, 600)}`);
  const outside = result.outsideCwd;
  if (outside) {
    // The judge can then say why a change is missing: it was made outside the run's directory.
    const what = outside.shared
      ? "changed outside the run's directory while it ran (not the attempt's to change)"
      : "changed outside the run's directory were discarded, not kept";
    lines.push(
      `left out: ${outside.count} path(s) ${what}: ${clipMiddle(outside.paths.join(", "), 300)}`,
    );
  }
  return lines.join("\n");
}

/** What the OS sandbox refused: the judge's feedback can say the attempt tried to leave its room. */
function describeRefusals(result: AttemptResult): string {
  const refusals = result.refusals ?? [];
  if (refusals.length === 0) return "";
  return [
    "## Refused by the sandbox (the agent may write only in its working directory and reach only its model)",
    ...refusals.slice(0, 12).map((r) => `- ${r.kind}: ${r.target}`),
    ...(refusals.length > 12 ? [`- … and ${refusals.length - 12} more`] : []),
  ].join("\n");
}

function describeFiles(files: readonly string[], maxChars: number): string {
  if (files.length === 0) return "## Files written\n(none reported)";
  const header = `## Files written (${files.length})`;
  const lines: string[] = [];
  let used = header.length;
  for (const file of files) {
    const line = `- ${oneLine(file, 200)}`;
    if (used + line.length + 1 > maxChars - 40) break;
    lines.push(line);
    used += line.length + 1;
  }
  if (lines.length < files.length) lines.push(`- … and ${files.length - lines.length} more`);
  return [header, ...lines].join("\n");
}

/**
 * The newest calls in detail (input and the end of the output), then earlier ones as one line
 * each, oldest first, and a count by tool of those left out entirely.
 */
function describeToolCalls(calls: readonly ToolCallRecord[], maxChars: number): string {
  if (calls.length === 0) return "## Tool calls\n(none)";
  const reserve = 300; // header plus the line naming the calls left out
  const room = maxChars - reserve;
  const outputChars = Math.max(120, Math.min(maxOutputChars, Math.floor(room / 8)));
  let detailRoom = Math.floor(room * 0.75);
  const detailed: string[] = [];
  let index = calls.length - 1;
  for (; index >= 0 && detailRoom >= minCallChars; index--) {
    const call = calls[index]!;
    let text = describeCall(call, index + 1, maxInputChars, outputChars);
    if (text.length > detailRoom) text = describeCall(call, index + 1, 80, detailRoom - 200);
    if (text.length > detailRoom) break;
    detailed.unshift(text);
    detailRoom -= text.length + 1;
  }
  let briefRoom = room - Math.floor(room * 0.75) + detailRoom;
  const brief: string[] = [];
  for (; index >= 0; index--) {
    const call = calls[index]!;
    const line = `[${index + 1}] ${oneLine(call.tool, 40)} (${oneLine(call.status, 20)}) ${oneLine(call.input, 100)}`;
    if (line.length + 1 > briefRoom) break;
    brief.unshift(line);
    briefRoom -= line.length + 1;
  }
  const omitted = calls.slice(0, index + 1);
  const shown = calls.length - omitted.length;
  const header = `## Tool calls (${calls.length}; ${
    omitted.length === 0 && brief.length === 0
      ? "all shown"
      : `the last ${detailed.length} in detail, ${shown - detailed.length} more in brief`
  })`;
  const lines = [header];
  if (omitted.length > 0) lines.push(`Earlier, not shown: ${countByTool(omitted)}`);
  return [...lines, ...brief, ...detailed].join("\n");
}

function describeCall(call: ToolCallRecord, n: number, inputChars: number, outputChars: number) {
  const input = oneLine(call.input, inputChars);
  const output = call.output.trim()
    ? clipStart(call.output.trim(), Math.max(40, outputChars))
    : "(no output)";
  return `[${n}] ${oneLine(call.tool, 60)} (${oneLine(call.status, 30)}) ${input}\n→ ${output}`;
}

function countByTool(calls: readonly ToolCallRecord[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) {
    const tool = oneLine(call.tool, 40);
    counts.set(tool, (counts.get(tool) ?? 0) + 1);
  }
  const sorted = [...counts].sort((a, b) => b[1] - a[1]);
  const top = sorted.slice(0, 8).map(([tool, count]) => `${tool} ×${count}`);
  if (sorted.length > 8) top.push(`${sorted.length - 8} other tools`);
  return `${calls.length} call(s): ${top.join(", ")}`;
}
